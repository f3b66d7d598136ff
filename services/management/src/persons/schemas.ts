import { Type } from '@sinclair/typebox';
import { AnyObject, component, Types } from '../shared/schema';

export const PersonPatch = component('PersonPatch', Type.Object({ properties: AnyObject({ description: 'merged into the person ($set)' }) }));

export const PersonBulkDelete = component(
  'PersonBulkDelete',
  Type.Object({
    distinct_ids: Type.Optional(Types<string[] | null>(['array', 'null'], { items: { type: 'string' }, description: 'at most 1000' })),
    ids: Type.Optional(
      Types<Array<string | number> | null>(['array', 'null'], { items: { type: ['string', 'integer'] }, description: 'person uuids or ids; at most 1000' }),
    ),
    delete_events: Type.Optional(Type.Boolean()),
    delete_recordings: Type.Optional(Type.Boolean()),
  }),
);
