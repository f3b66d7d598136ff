/**
 * The Postgres thread of embedded mode (see sql-thread.ts): opens PGlite and answers the statements of the main
 * thread and of the other threads given a port to it.
 */
import { workerData } from 'node:worker_threads';
import { createLogger, PortRpc } from '@plover/core';
import { serveSql } from '@plover/postgres/over-port';
import { openEmbeddedPostgres, SQL_CALLS, type SqlThreadData } from './sql-thread';
import { prettyLogStream } from './terminal';
import { STOP_CALL } from './threads';

const data = workerData as SqlThreadData;
const rpc = new PortRpc(data.port);

rpc.handle(SQL_CALLS.open, async () => {
  const logger = createLogger({ service: 'plover', level: data.logging.level, stream: prettyLogStream(data.logging.format) });
  const sql = await openEmbeddedPostgres(data.dataDir, logger);
  const clients = data.clientPorts.map((port) => new PortRpc(port));
  serveSql(rpc, sql);
  for (const client of clients) serveSql(client, sql);
  rpc.handle(STOP_CALL, async () => {
    // The main thread stops the other threads first; what they left open was rolled back when their ports closed.
    for (const client of clients) client.close();
    await sql.close();
  });
});
