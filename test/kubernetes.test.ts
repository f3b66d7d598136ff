/**
 * deploy/k8s: the base and the example overlay render with `kubectl kustomize`, every object is valid against the
 * Kubernetes API schemas, the pods run as the docs say (probes, resources, non-root), the configuration is what
 * the services accept, and the Ingress sends every path capture and decide serve to them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig, sections, variablesOf } from '@plover/config';
import {
  backendFor,
  concretePath,
  find,
  kustomizeAvailable,
  render,
  ROOT,
  schemaProblems,
  servedPaths,
  type Ingress,
  type KubeObject,
} from './support/kubernetes';

const SERVICES = ['capture', 'decide', 'ingestion', 'management'] as const;
const EVERY_SECTION = {
  logging: sections.logging,
  http: sections.http(8000),
  postgres: sections.postgres,
  clickhouse: sections.clickhouse,
  kafka: sections.kafka,
  capture: sections.capture,
  captureWorkers: sections.captureWorkers,
  decide: sections.decide,
  decideWorkers: sections.decideWorkers,
  ingestion: sections.ingestion,
  management: sections.management,
};

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
}
interface PodSpec {
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  automountServiceAccountToken?: boolean;
  containers: Container[];
}
interface Workload extends KubeObject {
  spec: { replicas?: number; selector?: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}
interface Service extends KubeObject {
  spec: { type?: string; selector?: Record<string, string>; ports?: Array<{ name: string; targetPort?: string | number }>; externalName?: string };
}
interface Budget extends KubeObject {
  spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable?: number };
}
interface Autoscaler extends KubeObject {
  spec: {
    scaleTargetRef: { kind: string; name: string };
    minReplicas: number;
    metrics: Array<{ type: string; resource?: { name: string; target: { type: string; averageUtilization?: number } } }>;
  };
}

/** CPU in millicores or memory in bytes, from a Kubernetes quantity. */
function quantity(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi)?$/.exec(text);
  if (!match) throw new Error(`unexpected quantity ${text}`);
  const units: Record<string, number> = { m: 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };
  return Number(match[1]) * (match[2] ? units[match[2]]! : 1000);
}

function podTemplates(objects: KubeObject[]): Workload[] {
  return objects.filter((o): o is Workload => o.kind === 'Deployment' || o.kind === 'Job');
}

/** The environment a pod gets from its ConfigMap and Secret references, resolved within `objects`. */
function environmentOf(objects: KubeObject[], container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { configMapRef, secretRef } of container.envFrom ?? []) {
    const ref = configMapRef ? { kind: 'ConfigMap', name: configMapRef.name } : { kind: 'Secret', name: secretRef!.name };
    const source = objects.find((o) => o.kind === ref.kind && o.metadata.name === ref.name);
    if (!source) throw new Error(`${container.name}: ${ref.kind} ${ref.name} is not among the objects`);
    for (const [key, value] of Object.entries(source.data ?? {})) env[key] = ref.kind === 'Secret' ? Buffer.from(value, 'base64').toString() : value;
  }
  return env;
}

function manifestSuite(): void {
  const base = render('deploy/k8s/base');
  const example = render('deploy/k8s/overlays/example');

  describe.each([
    ['base', base],
    ['overlays/example', example],
  ])('%s', (_name, objects) => {
    it('renders the objects of every service', () => {
      const kinds = (kind: string) =>
        objects
          .filter((o) => o.kind === kind)
          .map((o) => o.metadata.name)
          .sort();
      expect(kinds('Deployment')).toEqual(SERVICES.map((s) => `plover-${s}`).sort());
      expect(kinds('PodDisruptionBudget')).toEqual(SERVICES.map((s) => `plover-${s}`).sort());
      expect(kinds('HorizontalPodAutoscaler')).toEqual(['plover-capture', 'plover-decide']);
      expect(kinds('Job')).toEqual(['plover-migrate']);
      expect(kinds('Ingress')).toEqual(['plover']);
    });

    it('is valid against the Kubernetes API schemas, object by object', () => {
      expect(schemaProblems(objects)).toEqual([]);
    });
  });

  it('the schema check finds what is wrong with an invalid object (so the check above can fail)', () => {
    const deployment = structuredClone(find<Workload>(example, 'Deployment', 'plover-capture'));
    (deployment.spec as { replicas: unknown }).replicas = 'two';
    const job = structuredClone(find<Workload>(example, 'Job', 'plover-migrate'));
    delete (job.spec.template.spec as Partial<PodSpec>).containers;
    expect(schemaProblems([deployment, job])).toEqual([
      'Deployment plover-capture: data/spec/replicas must be integer',
      'Job plover-migrate: data/spec/template/spec must have required property containers',
    ]);
  });

  describe.each(SERVICES)('%s', (service) => {
    const deployment = find<Workload>(example, 'Deployment', `plover-${service}`);
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    const port = Number(environmentOf(example, container!).PORT);

    it('runs its own image at the overlay tag', () => {
      expect(pod.containers).toHaveLength(1);
      expect(container!.image).toBe(`registry.example.com/plover/${service}:0.1.0`);
    });

    it('is ready on /_ready and alive on /_health, at the port the service listens on', () => {
      expect(container!.readinessProbe?.httpGet.path).toBe('/_ready');
      expect(container!.livenessProbe?.httpGet.path).toBe('/_health');
      for (const probe of [container!.readinessProbe!, container!.livenessProbe!]) {
        expect(container!.ports?.find((p) => p.name === probe.httpGet.port)?.containerPort).toBe(port);
      }
    });

    it('requests and limits CPU and memory, each request within its limit', () => {
      for (const resource of ['cpu', 'memory']) {
        const request = container!.resources?.requests?.[resource];
        const limit = container!.resources?.limits?.[resource];
        expect({ resource, request: request && quantity(request) <= quantity(limit ?? '0') }).toEqual({ resource, request: true });
      }
    });

    it('has a disruption budget and a Service over exactly its pods', () => {
      const labels = deployment.spec.template.metadata.labels;
      expect(labels).toMatchObject(deployment.spec.selector!.matchLabels);
      expect(find<Budget>(example, 'PodDisruptionBudget', `plover-${service}`).spec).toEqual({ maxUnavailable: 1, selector: deployment.spec.selector });
      const svc = find<Service>(example, 'Service', `plover-${service}`);
      expect(svc.spec.selector).toEqual(deployment.spec.selector!.matchLabels);
      expect(svc.spec.ports?.map((p) => p.targetPort)).toEqual(['http']);
    });
  });

  it('every pod (services and migration) runs as a non-root user on a read-only root filesystem, without privileges', () => {
    for (const workload of podTemplates(example)) {
      const pod = workload.spec.template.spec;
      expect({ name: workload.metadata.name, pod: pod.securityContext }).toEqual({
        name: workload.metadata.name,
        pod: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const container of pod.containers) {
        expect({ name: container.name, security: container.securityContext }).toEqual({
          name: container.name,
          security: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        });
      }
    }
  });

  it('capture and decide scale on CPU, and their Deployments leave the replica count to the autoscaler', () => {
    for (const service of ['capture', 'decide']) {
      const autoscaler = find<Autoscaler>(example, 'HorizontalPodAutoscaler', `plover-${service}`);
      expect(autoscaler.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: `plover-${service}` });
      expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(autoscaler.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }]);
      expect(find<Workload>(example, 'Deployment', `plover-${service}`).spec.replicas).toBeUndefined();
    }
  });

  it('ingestion runs one process per partition at most (a consumer beyond the partition count idles)', () => {
    const ingestion = find<Workload>(example, 'Deployment', 'plover-ingestion');
    const env = environmentOf(example, ingestion.spec.template.spec.containers[0]!);
    const { kafka } = loadConfig(env, { kafka: sections.kafka });
    expect([ingestion.spec.replicas, kafka.partitions]).toEqual([4, 16]);
    const baseIngestion = find<Workload>(base, 'Deployment', 'plover-ingestion');
    const baseConfig = find<KubeObject>(base, 'ConfigMap', 'plover-config').data!;
    expect(baseIngestion.spec.replicas).toBeLessThanOrEqual(loadConfig(baseConfig, { kafka: sections.kafka }).kafka.partitions);
  });

  it('capture and decide run one process per pod, which their CPU requests are sized for', () => {
    const config = loadConfig(environmentOf(example, find<Workload>(example, 'Deployment', 'plover-decide').spec.template.spec.containers[0]!), {
      capture: sections.captureWorkers,
      decide: sections.decideWorkers,
    });
    expect(config).toEqual({ capture: 1, decide: 1 });
  });

  it('the migration Job runs the command of docker-compose.yml`s migrate service, with the management image, once', () => {
    const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: { migrate: { command: string[]; image: string } } };
    const job = find<Workload & { spec: { parallelism: number; completions: number } }>(example, 'Job', 'plover-migrate');
    const [container] = job.spec.template.spec.containers;
    expect(container!.command).toEqual(compose.services.migrate.command);
    expect(container!.image).toBe('registry.example.com/plover/management:0.1.0');
    expect([job.spec.parallelism, job.spec.completions]).toEqual([1, 1]);
  });

  it('every pod`s configuration is valid for every service and names no variable the services do not read', () => {
    const known = variablesOf(EVERY_SECTION);
    for (const workload of podTemplates(example)) {
      const env = environmentOf(example, workload.spec.template.spec.containers[0]!);
      expect(Object.keys(env).filter((name) => !(name in known))).toEqual([]);
      expect(() => loadConfig(env, EVERY_SECTION)).not.toThrow();
      expect(env.DATABASE_URL).toMatch(/@plover-postgres:5432\//);
    }
  });

  it('the stores are reached through ExternalName Services that the overlay points at its hosts', () => {
    const env = environmentOf(example, find<Workload>(example, 'Deployment', 'plover-ingestion').spec.template.spec.containers[0]!);
    const hosts = [new URL(env.DATABASE_URL!).hostname, new URL(env.CLICKHOUSE_URL!).hostname, env.KAFKA_BROKERS!.split(':')[0]!];
    expect(hosts.map((host) => find<Service>(example, 'Service', host).spec)).toEqual([
      expect.objectContaining({ type: 'ExternalName', externalName: 'postgres.db.example.com' }),
      expect.objectContaining({ type: 'ExternalName', externalName: 'clickhouse.db.example.com' }),
      expect.objectContaining({ type: 'ExternalName', externalName: 'kafka-0.kafka.example.com' }),
    ]);
  });

  it('the objects an upgrade applies first (config and migration, by label) are enough for the Job to run', () => {
    const first = example.filter((o) => ['config', 'migrate'].includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
    expect(first.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Job', 'Secret']);
    const job = find<Workload>(first, 'Job', 'plover-migrate');
    expect(() => environmentOf(first, job.spec.template.spec.containers[0]!)).not.toThrow();
  });

  describe('Ingress', () => {
    const ingress = find<Ingress>(example, 'Ingress', 'plover');
    const host = ingress.spec.rules[0]!.host!;
    const serviceOf = (urlPath: string) => {
      const name = backendFor(ingress, host, urlPath);
      const selector = name === undefined ? undefined : find<Service>(example, 'Service', name).spec.selector;
      return selector?.['app.kubernetes.io/component'];
    };

    it('serves one host with TLS, and every backend is a Service port that exists', () => {
      expect(host).toBe('plover.example.com');
      expect(ingress.spec.tls).toEqual([{ hosts: [host], secretName: 'plover-tls' }]);
      for (const { backend } of ingress.spec.rules[0]!.http.paths) {
        const ports = find<Service>(example, 'Service', backend.service.name).spec.ports!.map((p) => p.name);
        expect(ports).toContain(backend.service.port.name);
      }
    });

    it('reads the paths capture and decide serve from their code', () => {
      expect(servedPaths('capture')).toEqual(expect.arrayContaining(['/e', '/batch', '/i/v0/e', '/s']));
      expect(servedPaths('decide')).toEqual(expect.arrayContaining(['/decide', '/flags', '/array/:token/config', '/static/:name']));
    });

    it.each([...servedPaths('capture').map((p) => ['capture', p] as const), ...servedPaths('decide').map((p) => ['decide', p] as const)])(
      'routes %s`s %s to it, with and without a trailing slash',
      (service, routePath) => {
        const concrete = concretePath(routePath);
        expect([serviceOf(concrete), serviceOf(`${concrete.replace(/\/$/, '')}/`)]).toEqual([service, service]);
      },
    );

    it.each([
      '/',
      '/api/projects/1/persons',
      '/api/environments/1/insights/trend',
      '/api/users/@me',
      '/replay/abc',
      '/assets/index.js',
      '/events',
      '/static-site',
    ])('routes %s to management', (urlPath) => {
      expect(serviceOf(urlPath)).toBe('management');
    });

    it('lets bodies through up to past capture`s own limits (25 MiB on /s), unbuffered', () => {
      const annotations = ingress.metadata.annotations ?? {};
      expect(quantity(annotations['nginx.ingress.kubernetes.io/proxy-body-size']!.replace(/m$/, 'Mi'))).toBeGreaterThan(25 * 2 ** 20);
      expect(annotations['nginx.ingress.kubernetes.io/proxy-request-buffering']).toBe('off');
    });
  });
}

// Rendering happens while the suite is collected, so without a usable kubectl the suite is not collected at all.
if (kustomizeAvailable()) describe('Kubernetes manifests (deploy/k8s)', manifestSuite);
else describe.skip('Kubernetes manifests (deploy/k8s): no kubectl with kustomize v4 or newer', () => it('renders', () => undefined));
