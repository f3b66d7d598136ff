import { Type } from '@sinclair/typebox';
import { AnyObject, component, Types } from '../shared/schema';

export const QueryRequest = component(
  'QueryRequest',
  Type.Object({
    query: AnyObject({
      required: ['kind'],
      properties: { kind: { type: 'string', maxLength: 100 } },
      description: 'a query node: HogQLQuery `{kind, query, values?}`, HogQLMetadata, TrendsQuery, or a wrapper with a `source`',
    }),
    refresh: Type.Optional(
      Types<string | boolean>(['string', 'boolean'], { description: '`blocking` (default), `force_blocking`, `force_cache`, `async`, …' }),
    ),
    client_query_id: Type.Optional(Type.String({ maxLength: 128 })),
    name: Type.Optional(Type.String({ maxLength: 128 })),
    async: Type.Optional(Type.Boolean()),
    filters_override: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'])),
    variables_override: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'])),
    limit_context: Type.Optional(Types<string | null>(['string', 'null'])),
  }),
);
