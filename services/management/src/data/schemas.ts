import { Type } from '@sinclair/typebox';
import { AnyObject, component, Nullable } from '../shared/schema';

export const GroupType = component(
  'GroupType',
  Type.Object({ group_type: Type.String(), group_type_index: Type.Integer(), name_singular: Nullable(Type.String()), name_plural: Nullable(Type.String()) }),
);

export const Group = component(
  'Group',
  Type.Object({ group_type_index: Type.Integer(), group_key: Type.String(), group_properties: AnyObject(), created_at: Type.String({ format: 'date-time' }) }),
);

export const Event = component(
  'Event',
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    uuid: Type.String({ format: 'uuid' }),
    event: Type.String(),
    distinct_id: Type.String(),
    properties: AnyObject(),
    timestamp: Type.String({ format: 'date-time' }),
    person_id: Type.String(),
  }),
);

export const IngestionWarning = component(
  'IngestionWarning',
  Type.Object({ type: Type.String(), details: AnyObject(), timestamp: Type.String({ format: 'date-time' }), event_uuid: Type.String() }),
);
