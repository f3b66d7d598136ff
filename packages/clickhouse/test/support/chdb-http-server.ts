/**
 * TEST ONLY. The part of ClickHouse's HTTP interface that @clickhouse/client uses, served by chDB, so that
 * HttpClickHouse runs its contract suite through real HTTP against the real ClickHouse engine on a machine
 * without a ClickHouse server.
 *
 * What the client sends (node_modules/@clickhouse/client, 1.23) and how it is served here:
 * - `GET /ping` → `Ok.\n`.
 * - `GET|POST /?query_id=…&database=…&param_<name>=…&<setting>=…&query=…`. The SQL is the `query` parameter
 *   followed by the request body (query()/command() send the SQL as the body; insert() sends the
 *   `INSERT … FORMAT` in `query` and the rows as the body), as a server concatenates them.
 * - Parameters arrive already in ClickHouse's text form, exactly as a server would parse them, so they are
 *   handed to the engine untouched with `SET param_<name> = '<value>'` (chdb's own binding would format
 *   them a second time). Settings and the database become `SET …` / `USE …` the same way.
 * - Success: 200, the result bytes in the format the SQL names (TabSeparated otherwise), with
 *   `X-ClickHouse-Query-Id` and `X-ClickHouse-Summary`.
 * - Failure: 500 with `X-ClickHouse-Exception-Code: N` and a `Code: N. DB::Exception: … (NAME)` body, which is
 *   what the client parses into a ClickHouseError.
 * Each request gets its own chDB connection on the one data directory, so its SETs cannot leak into another
 * request, and concurrent requests run in parallel like on a server. Credentials are not checked.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainPending, Session } from 'chdb';

export interface ChdbHttpServer {
  url: string;
  /** Stops listening, waits for requests in flight, and releases the data directory. */
  close(): Promise<void>;
}

/** URL parameters that are not settings. `session_id` and `role` are accepted and ignored. */
const NOT_SETTINGS = new Set(['query', 'query_id', 'database', 'session_id', 'role']);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** ClickHouse's STD_EXCEPTION, for failures that carry no ClickHouse code. */
const STD_EXCEPTION = 1001;

export interface ChdbHttpServerOptions {
  /** Arguments of every chDB connection, e.g. `--config-file=…` for a server configuration (clusters, macros). */
  connectionArgs?: string[];
}

export async function startChdbHttpServer(dataDir: string, options: ChdbHttpServerOptions = {}): Promise<ChdbHttpServer> {
  const inFlight = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const handled = handle(dataDir, options.connectionArgs ?? [], req, res).catch((error: unknown) => {
      res.destroy(error as Error);
    });
    inFlight.add(handled);
    void handled.finally(() => inFlight.delete(handled));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.allSettled([...inFlight]);
      server.closeAllConnections();
      await closed;
      // A connection's destruction may still be deferred behind native calls; the directory is free after this.
      await drainPending();
    },
  };
}

async function handle(dataDir: string, connectionArgs: string[], req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const body = await readBody(req);
  if (req.method === 'GET' && url.pathname === '/ping') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    return;
  }
  const queryId = url.searchParams.get('query_id') ?? randomUUID();
  let session: Session | undefined;
  try {
    const setup = setupStatements(url.searchParams);
    const sql = [url.searchParams.get('query') ?? '', body].filter((part) => part !== '').join('\n');
    session = new Session(dataDir, { connectionArgs });
    for (const statement of setup) await session.queryAsync(statement);
    const result = await session.queryAsync(sql, { format: 'TabSeparated' });
    const summary = { read_rows: String(result.rowsRead), read_bytes: String(result.bytesRead), elapsed_ns: String(Math.round(result.elapsed * 1e9)) };
    res
      .writeHead(200, {
        'Content-Type': 'text/plain; charset=UTF-8',
        'X-ClickHouse-Query-Id': queryId,
        'X-ClickHouse-Summary': JSON.stringify(summary),
      })
      .end(result.bytes());
  } catch (error) {
    const { code, text } = exception(error);
    res
      .writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Query-Id': queryId, 'X-ClickHouse-Exception-Code': String(code) })
      .end(`${text}\n`);
  } finally {
    session?.close();
  }
}

/** `USE`/`SET` statements carrying the request's database, settings and parameters, values verbatim. */
function setupStatements(search: URLSearchParams): string[] {
  const statements: string[] = [];
  for (const [key, value] of search) {
    if (key === 'database') statements.push(`USE \`${value.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``);
    else if (NOT_SETTINGS.has(key)) continue;
    else if (IDENTIFIER.test(key)) statements.push(`SET ${key} = '${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
    else throw Object.assign(new Error(`Code: 115. DB::Exception: Unknown setting ${JSON.stringify(key)}. (UNKNOWN_SETTING)`), { clickhouseCode: 115 });
  }
  return statements;
}

function exception(error: unknown): { code: number; text: string } {
  // chDB's messages for engine errors are already a server's exception text.
  const { clickhouseCode, message } = error as { clickhouseCode?: number; message?: string };
  if (typeof clickhouseCode === 'number' && message?.startsWith('Code: ')) return { code: clickhouseCode, text: message };
  return { code: STD_EXCEPTION, text: `Code: ${STD_EXCEPTION}. DB::Exception: ${message ?? String(error)}. (STD_EXCEPTION)` };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
