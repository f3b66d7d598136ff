/**
 * A TCP proxy that a test can cut: while blocked it refuses connections and has broken every open one, which is
 * what a client sees when a server goes down or the network fails. Clients keep the proxy's address, so once
 * unblocked they reconnect by themselves, as they would to a restarted server.
 */
import net from 'node:net';

export interface TcpProxy {
  /** `127.0.0.1:<port>`, fixed for the proxy's life. */
  readonly host: string;
  readonly port: number;
  block(): Promise<void>;
  unblock(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;

  const listen = (port: number) =>
    new Promise<net.Server>((resolve, reject) => {
      const next = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          // A reset on one side is passed on by destroying the other; the error itself is the client's to see.
          socket.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => resolve(next));
    });
  const stop = async () => {
    const current = server;
    server = undefined;
    if (!current) return;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  server = await listen(0);
  const { port } = server.address() as net.AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    block: stop,
    async unblock() {
      server ??= await listen(port);
    },
    close: stop,
  };
}
