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

type Evaluate = (retried: number) => number;

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
 * The returned function does not clamp: it may return a negative number, `NaN` or `±Infinity`
 * (`1/0`, `sqrt(-1)`), and the caller decides what such a result means. It never throws.
 *
 * @param field the header name (`Svc-Retry-Delay`), used in error messages.
 * @throws FerryError 400 naming `field`, the expression and the problem: syntax errors, unknown
 *   names or functions, wrong arity, operators other than `+ - * / %` and unary `- +`, strings,
 *   booleans, member access, conditionals, arrays, more than one expression, or a source longer
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
    return compile(tree);
  } catch (err) {
    if (err instanceof Rejected) throw fail(err.message);
    throw err;
  }
}

function compile(node: jsep.Expression): Evaluate {
  switch (node.type) {
    case 'Literal': {
      const { value, raw } = node as jsep.Literal;
      if (typeof value !== 'number') {
        throw new Rejected(
          typeof value === 'string' ? 'strings are not allowed' : `${raw} is not allowed`,
        );
      }
      if (!Number.isFinite(value)) throw new Rejected(`number ${raw} is too large`);
      return () => value;
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
      return (retried) => retried;
    }
    case 'UnaryExpression': {
      const { operator, argument } = node as jsep.UnaryExpression;
      const arg = compile(argument);
      if (operator === '-') return (r) => -arg(r);
      if (operator === '+') return arg;
      throw new Rejected(`operator "${operator}" is not allowed (use + - * / %)`);
    }
    case 'BinaryExpression': {
      const { operator, left, right } = node as jsep.BinaryExpression;
      const op = BINARY.get(operator);
      if (!op) throw new Rejected(`operator "${operator}" is not allowed (use + - * / %)`);
      const l = compile(left);
      const r = compile(right);
      return (x) => op(l(x), r(x));
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
      const compiled = args.map(compile);
      return (r) => fn.fn(...compiled.map((c) => c(r)));
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
