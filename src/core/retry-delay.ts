import jsep from 'jsep';
import { badRequest } from './errors.js';
import { quoteValue } from './headers.js';

/**
 * The `Svc-Retry-Delay` expression language: arithmetic over the variable `retried` (retries
 * already done, 0 for the first retry) whose result is the delay in milliseconds, like
 * `pow(2, retried) * 1000`.
 *
 * The expression comes from a client and is evaluated by the server, so it is never handed to
 * `eval`/`Function`: jsep parses it, the whole tree is checked against a whitelist at publish time
 * (so a bad expression is a 400 then, never a failure at delivery time), and the checked tree is
 * turned into a tree of small closures that only do arithmetic.
 */

/** Longest accepted expression, in characters. */
export const MAX_RETRY_DELAY_LENGTH = 1024;

/**
 * Deepest accepted expression tree (operators and calls; a chain `a + b + c` nests one level per
 * operator). The length limit alone would allow about 500 levels.
 */
export const MAX_RETRY_DELAY_DEPTH = 100;

type Evaluate = (retried: number) => number;

/** A compiled node; `constant` when it does not depend on `retried`. */
interface Compiled {
  evaluate: Evaluate;
  constant: boolean;
}

/** The whitelisted functions, by name, with their exact arity. A Map, so `constructor` is unknown. */
const FUNCTIONS: ReadonlyMap<string, { arity: number; fn: (...args: number[]) => number }> =
  new Map([
    ['pow', { arity: 2, fn: (x: number, y: number) => Math.pow(x, y) }],
    ['exp', { arity: 1, fn: (x: number) => Math.exp(x) }],
    ['sqrt', { arity: 1, fn: (x: number) => Math.sqrt(x) }],
    ['abs', { arity: 1, fn: (x: number) => Math.abs(x) }],
    ['floor', { arity: 1, fn: (x: number) => Math.floor(x) }],
    ['ceil', { arity: 1, fn: (x: number) => Math.ceil(x) }],
    // JavaScript rounding: halves go towards +∞ (round(-2.5) = -2).
    ['round', { arity: 1, fn: (x: number) => Math.round(x) }],
    ['min', { arity: 2, fn: (x: number, y: number) => Math.min(x, y) }],
    ['max', { arity: 2, fn: (x: number, y: number) => Math.max(x, y) }],
  ]);

const BINARY: ReadonlyMap<string, (a: number, b: number) => number> = new Map([
  ['+', (a: number, b: number) => a + b],
  ['-', (a: number, b: number) => a - b],
  ['*', (a: number, b: number) => a * b],
  ['/', (a: number, b: number) => a / b],
  ['%', (a: number, b: number) => a % b],
]);

/** A problem found while checking the tree; turned into a 400 by `compileRetryDelay`. */
class Rejected extends Error {}

/**
 * Validates `source` and returns a function computing the delay in milliseconds for a given
 * number of retries already done (`retried`, 0 for the first retry).
 *
 * A part of the expression that does not depend on `retried` is computed here and must be a
 * finite number: `pow(10, 400)`, `1/0` and `sqrt(-1)` are refused. The returned function does not
 * clamp: it may still return a negative number, `NaN` or `±Infinity` for some values of `retried`
 * (`pow(10, retried * 400)`), and the caller decides what such a result means. It never throws.
 *
 * @param field the header name (`Svc-Retry-Delay`), used in error messages.
 * @throws FerryError 400 naming `field`, the expression and the problem: syntax errors, unknown
 *   names or functions, wrong arity, operators other than `+ - * / %` and unary `- +`, strings,
 *   booleans, member access, conditionals, arrays, more than one expression, a constant part that
 *   is not a finite number, nesting deeper than {@link MAX_RETRY_DELAY_DEPTH} or a source longer
 *   than {@link MAX_RETRY_DELAY_LENGTH} characters.
 */
export function compileRetryDelay(source: string, field: string): Evaluate {
  const fail = (problem: string) =>
    badRequest(`invalid ${field} ${quoteValue(source)}: ${problem}`);
  if (source.length > MAX_RETRY_DELAY_LENGTH) {
    throw fail(`longer than ${MAX_RETRY_DELAY_LENGTH} characters`);
  }
  let tree: jsep.Expression;
  try {
    tree = jsep(source);
  } catch (err) {
    throw fail(err instanceof Error ? err.message : String(err));
  }
  try {
    return compile(tree, 0).evaluate;
  } catch (err) {
    if (err instanceof Rejected) throw fail(err.message);
    throw err;
  }
}

function compile(node: jsep.Expression, depth: number): Compiled {
  if (depth > MAX_RETRY_DELAY_DEPTH) {
    throw new Rejected(`nested deeper than ${MAX_RETRY_DELAY_DEPTH} levels`);
  }
  const compiled = compileNode(node, depth + 1);
  if (!compiled.constant) return compiled;
  // Fold a constant part once: it must be a number the engine can use.
  const value = compiled.evaluate(0);
  if (!Number.isFinite(value)) {
    throw new Rejected(`${constantText(node)} is not a finite number`);
  }
  return { evaluate: () => value, constant: true };
}

function constantText(node: jsep.Expression): string {
  if (node.type === 'CallExpression') {
    return `${((node as jsep.CallExpression).callee as jsep.Identifier).name}(…)`;
  }
  return 'a constant part';
}

function compileNode(node: jsep.Expression, depth: number): Compiled {
  switch (node.type) {
    case 'Literal': {
      const { value, raw } = node as jsep.Literal;
      if (typeof value !== 'number') {
        throw new Rejected(
          typeof value === 'string' ? 'strings are not allowed' : `${raw} is not allowed`,
        );
      }
      if (!Number.isFinite(value)) throw new Rejected(`number ${raw} is too large`);
      return { evaluate: () => value, constant: true };
    }
    case 'Identifier': {
      const { name } = node as jsep.Identifier;
      if (name !== 'retried') {
        throw new Rejected(
          FUNCTIONS.has(name)
            ? `function "${name}" must be called, like ${name}(…)`
            : `unknown name "${name}" (the only variable is "retried")`,
        );
      }
      return { evaluate: (retried) => retried, constant: false };
    }
    case 'UnaryExpression': {
      const { operator, argument } = node as jsep.UnaryExpression;
      if (operator !== '-' && operator !== '+') {
        throw new Rejected(`operator "${operator}" is not allowed (use + - * / %)`);
      }
      const arg = compile(argument, depth);
      if (operator === '+') return arg;
      return { evaluate: (r) => -arg.evaluate(r), constant: arg.constant };
    }
    case 'BinaryExpression': {
      const { operator, left, right } = node as jsep.BinaryExpression;
      const op = BINARY.get(operator);
      if (!op) throw new Rejected(`operator "${operator}" is not allowed (use + - * / %)`);
      const l = compile(left, depth);
      const r = compile(right, depth);
      return {
        evaluate: (x) => op(l.evaluate(x), r.evaluate(x)),
        constant: l.constant && r.constant,
      };
    }
    case 'CallExpression': {
      const { callee, arguments: args } = node as jsep.CallExpression;
      if (callee.type !== 'Identifier') {
        throw new Rejected('only the built-in functions can be called, like pow(2, retried)');
      }
      const { name } = callee as jsep.Identifier;
      const fn = FUNCTIONS.get(name);
      if (!fn) {
        throw new Rejected(
          `unknown function "${name}" (known: ${[...FUNCTIONS.keys()].join(', ')})`,
        );
      }
      if (args.length !== fn.arity) {
        const plural = fn.arity === 1 ? 'argument' : 'arguments';
        throw new Rejected(`${name} takes ${fn.arity} ${plural}, got ${args.length}`);
      }
      const compiled = args.map((a) => compile(a, depth));
      return {
        evaluate: (r) => fn.fn(...compiled.map((c) => c.evaluate(r))),
        constant: compiled.every((c) => c.constant),
      };
    }
    case 'Compound': {
      const { body } = node as jsep.Compound;
      throw new Rejected(body.length === 0 ? 'empty expression' : 'only one expression is allowed');
    }
    case 'MemberExpression':
      throw new Rejected('property access is not allowed');
    case 'ThisExpression':
      throw new Rejected('"this" is not allowed');
    case 'ConditionalExpression':
      throw new Rejected('conditional expressions (?:) are not allowed');
    case 'SequenceExpression':
      throw new Rejected('comma expressions are not allowed');
    case 'ArrayExpression':
      throw new Rejected('arrays are not allowed');
    default:
      throw new Rejected(`${node.type} is not allowed`);
  }
}
