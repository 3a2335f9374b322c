import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { acceptsAnyText } from './openapi.js';

// Header and path values always arrive as strings: a schema that accepts every string map is not
// validated (the check could not fail). Anything that can refuse a value must still be checked.
describe('acceptsAnyText', () => {
  const optional = (schema: ReturnType<typeof Type.String>) => Type.Optional(schema);
  it.each([
    [
      'documented optional strings',
      Type.Object({ 'Svc-Retries': optional(Type.String({ description: 'd' })) }),
      false,
      true,
    ],
    ['no properties', Type.Object({}), false, true],
    ['a required header', Type.Object({ 'Svc-Key': Type.String() }), false, false],
    [
      'path parameters (always there)',
      Type.Object({ id: Type.String(), name: Type.String() }),
      true,
      true,
    ],
    ['a pattern', Type.Object({ id: Type.String({ pattern: '^a' }) }), true, false],
    ['a length bound', Type.Object({ id: Type.String({ maxLength: 3 }) }), true, false],
    [
      'an enum',
      Type.Object({ id: Type.Union([Type.Literal('a'), Type.Literal('b')]) }),
      true,
      false,
    ],
    [
      'a number',
      Type.Object({ n: optional(Type.String()), m: Type.Optional(Type.Integer()) }),
      false,
      false,
    ],
    ['other properties refused', Type.Object({}, { additionalProperties: false }), false, false],
  ])('%s', (_, schema, pathParams, expected) => {
    expect(acceptsAnyText(schema as unknown as Record<string, unknown>, pathParams)).toBe(expected);
  });
});
