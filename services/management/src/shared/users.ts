import { randomInt } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { AnyObject, component } from './schema';

/** A user as PostHog's UserBasicSerializer shows them (an object's creator or last editor). */
export const UserBasic = component(
  'UserBasic',
  Type.Object({
    id: Type.Integer(),
    uuid: Type.String({ format: 'uuid' }),
    distinct_id: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    email: Type.String({ format: 'email' }),
    is_email_verified: Type.Boolean(),
    hedgehog_config: Type.Unsafe<Record<string, unknown> | null>({ ...AnyObject(), type: ['object', 'null'] }),
    role_at_organization: Type.String(),
  }),
);
export type UserBasic = Static<typeof UserBasic>;

/** A creator or last editor: the user, or null when the user is gone. */
export const UserOrNull = Type.Union([UserBasic, Type.Null()]);

/** SQL building the {@link UserBasic} of the `users` row `alias` (null when the join found none). */
export const USER_JSON = (alias: string) =>
  `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE json_build_object('id', ${alias}.id, 'uuid', ${alias}.uuid, 'distinct_id', ${alias}.distinct_id,
    'first_name', ${alias}.first_name, 'last_name', ${alias}.last_name, 'email', ${alias}.email, 'is_email_verified', ${alias}.is_email_verified,
    'hedgehog_config', ${alias}.hedgehog_config, 'role_at_organization', ${alias}.role_at_organization) END`;

const SHORT_ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 8 characters of [A-Za-z0-9] from a CSPRNG, as PostHog's generate_short_id (playlists, insights). */
export function newShortId(): string {
  let id = '';
  for (let i = 0; i < 8; i++) id += SHORT_ID_ALPHABET[randomInt(SHORT_ID_ALPHABET.length)]!;
  return id;
}
