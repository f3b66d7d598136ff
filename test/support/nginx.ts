/**
 * deploy/nginx/plover.conf.template run by Debian's nginx in the foreground, as a child process on a prefix
 * directory of its own (its pid file, logs and temporary files), in front of services already listening.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const NGINX_TEMPLATE = path.resolve(__dirname, '../../deploy/nginx/plover.conf.template');

/** The template's variables: `host:port` of each service, and what nginx listens on. */
export interface ProxyTargets {
  capture: string;
  decide: string;
  management: string;
}

export interface RunningNginx {
  port: number;
  url: string;
  /** nginx's error log so far. */
  errors(): string;
  /** SIGQUIT (a graceful stop), then removes the prefix directory. */
  stop(): Promise<void>;
}

/** The template with every `${NAME}` replaced; a name without a value is an error, nginx's own `$name`s stay. */
export function renderTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for \${${name}} in the nginx template`);
    return value;
  });
}

/** A port on 127.0.0.1 that nothing listens on now. */
export function freePort(): Promise<number> {
  const server = net.createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts nginx on 127.0.0.1 with the repository's configuration for `targets`, on `port` (chosen beforehand when
 * a service must know nginx's URL when it starts) or else a free port.
 */
export async function startNginx(targets: ProxyTargets, port?: number): Promise<RunningNginx> {
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-nginx-'));
  // nginx's workers run as an unprivileged user when the master is root: they must reach the temporary files.
  fs.chmodSync(prefix, 0o755);
  port ??= await freePort();
  fs.writeFileSync(
    path.join(prefix, 'plover.conf'),
    renderTemplate(fs.readFileSync(NGINX_TEMPLATE, 'utf8'), {
      PLOVER_LISTEN: `127.0.0.1:${port}`,
      PLOVER_CAPTURE: targets.capture,
      PLOVER_DECIDE: targets.decide,
      PLOVER_MANAGEMENT: targets.management,
    }),
  );
  // Debian's nginx is built with absolute paths for its logs and temporary files: each is set inside the prefix.
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => `${kind}_temp_path ${path.join(prefix, kind)};`).join(' ');
  fs.writeFileSync(
    path.join(prefix, 'nginx.conf'),
    `worker_processes 1;
pid ${path.join(prefix, 'nginx.pid')};
error_log ${path.join(prefix, 'error.log')} warn;
events { worker_connections 512; }
http { access_log off; ${temp} include ${path.join(prefix, 'plover.conf')}; }
`,
  );
  const errorLog = path.join(prefix, 'error.log');
  const child = spawn('nginx', ['-p', prefix, '-e', errorLog, '-c', path.join(prefix, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const errors = (): string => `${output}${fs.existsSync(errorLog) ? fs.readFileSync(errorLog, 'utf8') : ''}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
    await exited;
    fs.rmSync(prefix, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = errors();
      await stop();
      throw new Error(`nginx did not start on port ${port}:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { port, url: `http://127.0.0.1:${port}`, errors, stop };
}
