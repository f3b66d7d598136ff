/**
 * What test/kubernetes.test.ts reads: the manifests under deploy/k8s as `kubectl kustomize` renders them, the
 * Ingress's choice of backend for a request path, and the paths capture and decide serve, read from their route tables.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { captureRoutes } from '@plover/capture/app';
import { silentLogger } from '@plover/core';
import { decideRoutes } from '@plover/decide/app';
import { createMetricsRegistry, type SdkRoute } from '@plover/http';
import { availableTool } from './services';

export const ROOT = path.resolve(__dirname, '../..');

/** The oldest kustomize whose fields (`patches` with a target, `replicas`, generator `envs`) deploy/k8s uses. */
const KUSTOMIZE_MAJOR = 4;

/**
 * Whether `kubectl kustomize` can render deploy/k8s: kubectl on the PATH with kustomize 4 or newer built in.
 * Outside CI a missing or older kubectl skips the suite; under CI=true it fails (.ci/run installs kubectl).
 */
export function kustomizeAvailable(): boolean {
  if (!availableTool('kubectl')) return false;
  const version = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).stdout;
  const major = Number(/Kustomize Version: v(\d+)/.exec(version)?.[1] ?? 0);
  if (major >= KUSTOMIZE_MAJOR) return true;
  const found = `kubectl's kustomize is ${major ? `v${major}` : 'missing'}, deploy/k8s needs v${KUSTOMIZE_MAJOR} or newer`;
  if (process.env.CI === 'true') throw new Error(`${found}: under CI=true the Kubernetes manifests must be rendered`);
  return false;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec?: unknown;
}

/** `kubectl kustomize <dir>` (relative to the repository), as one object per YAML document. */
export function render(dir: string): KubeObject[] {
  const text = execFileSync('kubectl', ['kustomize', path.join(ROOT, dir)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw document.errors[0]!;
    const object = document.toJSON() as KubeObject;
    // kustomize folds a long Secret value's base64 over lines; the API server's decoder (Go's) skips line breaks.
    if (object.kind === 'Secret') for (const key of Object.keys(object.data ?? {})) object.data![key] = object.data![key]!.replace(/\s/g, '');
    return object;
  });
}

/** The one object of `kind` named `name` (generated ConfigMaps and Secrets by their name before the hash). */
export function find<T extends KubeObject>(objects: KubeObject[], kind: string, name: string): T {
  const found = objects.filter((o) => o.kind === kind && (o.metadata.name === name || o.metadata.name.startsWith(`${name}-`)));
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0] as T;
}

/**
 * What is wrong with each object that is not valid against the Kubernetes API schemas of its apiVersion and kind
 * (npm kubernetes-models, in a child process: see kubernetes-schemas.ts), as `<kind> <name>: <problem>` lines.
 */
export function schemaProblems(objects: KubeObject[]): string[] {
  const output = execFileSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'kubernetes-schemas.ts')], {
    cwd: ROOT,
    input: JSON.stringify(objects),
    encoding: 'utf8',
  });
  return JSON.parse(output) as string[];
}

interface IngressPath {
  path: string;
  pathType: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: { service: { name: string; port: { name?: string; number?: number } } };
}
export interface Ingress extends KubeObject {
  spec: { ingressClassName?: string; rules: Array<{ host?: string; http: { paths: IngressPath[] } }>; tls?: Array<{ hosts: string[] }> };
}

/** The path's segments, as Kubernetes compares them: empty ones (from `//` or a trailing `/`) ignored. */
function segments(urlPath: string): string[] {
  return urlPath.split('/').filter(Boolean);
}

/**
 * Which Service the Ingress sends a request for `host` and `urlPath` to, by the Ingress API's rules: an `Exact`
 * path wins over a `Prefix`, and among prefixes, matched segment by segment, the longest; undefined when none
 * matches.
 */
export function backendFor(ingress: Ingress, host: string, urlPath: string): string | undefined {
  const rule = ingress.spec.rules.find((r) => r.host === undefined || r.host === host);
  if (!rule) return undefined;
  const wanted = segments(urlPath);
  let best: { length: number; exact: boolean; service: string } | undefined;
  for (const { path: rulePath, pathType, backend } of rule.http.paths) {
    if (pathType !== 'Exact' && pathType !== 'Prefix') throw new Error(`${rulePath}: pathType ${pathType} is the controller's to interpret`);
    const prefix = segments(rulePath);
    const exact = pathType === 'Exact';
    const matches = exact ? rulePath === urlPath : prefix.every((segment, index) => wanted[index] === segment);
    if (!matches) continue;
    if (!best || (exact && !best.exact) || (exact === best.exact && prefix.length > best.length)) {
      best = { length: prefix.length, exact, service: backend.service.name };
    }
  }
  return best?.service;
}

/** Route tables are only read here: no handler runs, so nothing they would reach is given. */
const UNREACHED = {} as never;

/** The SDK route tables of capture and decide, as their code builds them. */
const SDK_TABLES = {
  capture: (): SdkRoute[] =>
    captureRoutes({
      logger: silentLogger(),
      metrics: createMetricsRegistry('capture'),
      sql: UNREACHED,
      bus: UNREACHED,
      trustProxy: true,
      projectTokens: UNREACHED,
    }).table,
  decide: (): SdkRoute[] =>
    decideRoutes({
      logger: silentLogger(),
      metrics: createMetricsRegistry('decide'),
      sql: UNREACHED,
      trustProxy: true,
      projectTokens: UNREACHED,
      definitions: UNREACHED,
    }).table,
};

/**
 * The paths a service serves, read from its SDK route table (`captureRoutes`, `decideRoutes`): every path and
 * alias of every route, without the trailing slash the service treats as optional, parameters (`:token`) included.
 */
export function servedPaths(service: keyof typeof SDK_TABLES): string[] {
  const paths = SDK_TABLES[service]().flatMap((route) => [route.path, ...(route.aliases ?? [])]);
  return [...new Set(paths.map((routePath) => routePath.replace(/\/$/, '')))].sort();
}

/** A request path that an Express route path matches: each parameter (`:name`, `*name`) given a value. */
export function concretePath(routePath: string): string {
  return routePath.replace(/[{}]/g, '').replace(/:\w+/g, 'x1').replace(/\*\w+/g, 'x1/x2');
}
