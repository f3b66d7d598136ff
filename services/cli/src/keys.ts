import type { Command } from 'commander';
import { action, apiOf, output, withConnection, type ConnectionOptions } from './command';
import { UserError } from './errors';

interface PersonalApiKey {
  id: string;
  label: string;
  value: string | null;
  mask_value: string;
  scopes: string[];
  scoped_teams: number[] | null;
  scoped_organizations: string[] | null;
  created_at: string;
  last_used_at: string | null;
}

function describe(key: PersonalApiKey): string {
  const projects = key.scoped_teams?.length ? ` projects ${key.scoped_teams.join(',')}` : '';
  return `${key.id}  ${key.mask_value}  ${JSON.stringify(key.label)}  ${key.scopes.join(',')}${projects}  last used ${key.last_used_at ?? 'never'}`;
}

const PATH = 'api/personal_api_keys/';

interface CreateOptions extends ConnectionOptions {
  label: string;
  scopes: string;
  /** `--project` is the connection's; a key is limited to it only with --limit-to-project. */
  limitToProject?: boolean;
}

/** `plover keys list|create|revoke`: personal API keys over `/api/personal_api_keys/`, within the calling key's own reach. */
export function keysCommand(program: Command): void {
  const keys = program
    .command('keys')
    .summary('list, create and revoke personal API keys')
    .description(
      'Personal API keys (phx_…) for the management API. A key may create, see and revoke only keys within its own scopes and ' +
        'project limits. A new key is printed once: it is stored hashed and cannot be shown again.',
    );

  withConnection(keys.command('list'))
    .description('list the keys the calling key may see (masked)')
    .addHelpText('after', '\nExamples:\n  $ plover keys list\n  $ plover keys list --json | jq -r ".[].id"')
    .action(
      action(async (options: ConnectionOptions) => {
        const listed = await apiOf(options).json<PersonalApiKey[]>(PATH);
        output(options, listed, () => (listed.length === 0 ? 'no keys\n' : `${listed.map(describe).join('\n')}\n`));
      }),
    );

  withConnection(keys.command('create'))
    .description('create a key and print it once')
    .requiredOption('--scopes <scopes>', 'comma-separated scopes, e.g. event:read,person:read, or * for all')
    .option('--label <label>', 'a name to recognise the key by', 'plover CLI')
    .option('--limit-to-project', 'limit the key to --project (by default it reaches every project the calling key reaches)')
    .addHelpText(
      'after',
      `
Examples:
  $ plover keys create --label "nightly export" --scopes query:read,person:read --project 2 --limit-to-project
  $ plover keys create --scopes '*' --json | jq -r .value`,
    )
    .action(
      action(async (options: CreateOptions) => {
        const api = apiOf(options);
        const scopes = options.scopes
          .split(',')
          .map((scope) => scope.trim())
          .filter(Boolean);
        if (scopes.length === 0) throw new UserError('--scopes names no scope');
        const body: Record<string, unknown> = { label: options.label, scopes };
        if (options.limitToProject) body.scoped_teams = [(await api.projectToken()).id];
        const created = await api.json<PersonalApiKey>(PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        output(options, created, () => `${created.value}\n\ncreated ${describe(created)}\nThis is the only time the key is shown: store it now.\n`);
      }),
    );

  withConnection(keys.command('revoke'))
    .description('revoke a key at once (by the id `keys list` shows)')
    .argument('<id>', 'the key’s id')
    .addHelpText('after', '\nExamples:\n  $ plover keys revoke 0190a6c1-aaaa-bbbb-cccc-dddddddddddd')
    .action(
      action(async (id: string, options: ConnectionOptions) => {
        await apiOf(options).json(`${PATH}${encodeURIComponent(id)}/`, { method: 'DELETE' });
        output(options, { revoked: id }, () => `revoked ${id}\n`);
      }),
    );
}
