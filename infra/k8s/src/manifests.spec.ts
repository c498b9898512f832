/**
 * The Kubernetes manifests (infra/k8s): every overlay rendered, every object validated against
 * the schema a cluster would enforce, the system's own rules checked, and the validator shown to
 * refuse what a cluster would refuse.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { Queues, WorkQueues } from '@herald/contracts';
import { SERVICES as LOCAL_SERVICES } from '../../local/service-list.ts';
import { ALERTS_FILE, deploymentName, generatedFiles, gracePeriodSeconds, K8S_DIR, Names } from './generate.ts';
import { kustomizeBuild, objectKey, type K8sObject } from './kustomize.ts';
import { consumedQueues, PREPARE_CONNECTIONS, SERVICES, SHUTDOWN_OVERRUN_MS, type DatabaseRoute } from './services.ts';
import { compileCrdValidators, schemaSource, validateObject } from './validate.ts';

const OVERLAYS = ['base', 'overlays/dev', 'overlays/production'] as const;
const rendered = new Map(OVERLAYS.map((dir) => [dir, kustomizeBuild(join(K8S_DIR, dir))]));
const render = (dir: (typeof OVERLAYS)[number]): K8sObject[] => rendered.get(dir) ?? [];
const byKind = (objects: K8sObject[], kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (o === undefined) throw new Error(`no ${kind}/${name}`);
  return o;
};

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are read as plain YAML data */
type Any = any;
const podSpec = (o: K8sObject): Any => (o['spec'] as Any).template.spec;

/** The PostgreSQL endpoint a workload's DATABASE_URL names. */
function databaseRoute(w: K8sObject): DatabaseRoute {
  const url = String((podSpec(w).containers[0].env as Any[]).find((e) => e.name === 'DATABASE_URL')?.value);
  if (url.includes('$(POSTGRES_PRIMARY_HOST)')) return 'primary';
  if (url.includes('$(POSTGRES_POOLER_HOST)')) return 'pooler';
  throw new Error(`${w.metadata.name}: DATABASE_URL ${url} names neither the primary nor the Pooler`);
}

/**
 * Pods of a Deployment there can be at once: KEDA's maximum (its ScaledObject's, else its fixed
 * replicas) plus what a rolling update adds on top (maxSurge, a percentage rounded up).
 */
function peakPods(objects: K8sObject[], d: K8sObject): number {
  const scaled = objects.find((o) => o.kind === 'ScaledObject' && (o['spec'] as Any).scaleTargetRef.name === d.metadata.name);
  const max = (scaled === undefined ? (d['spec'] as Any).replicas : (scaled['spec'] as Any).maxReplicaCount) as number;
  const strategy = (d['spec'] as Any).strategy;
  if (strategy?.type === 'Recreate') return max;
  const surge = (strategy?.rollingUpdate?.maxSurge ?? '25%') as number | string;
  return max + (typeof surge === 'number' ? surge : Math.ceil((max * parseInt(surge, 10)) / 100));
}

/** PostgreSQL connections each Deployment on `route` may hold at its peak: peak pods × connections per process (services.ts). */
function connectionsAtPeak(objects: K8sObject[], route: DatabaseRoute): Record<string, number> {
  const demand: Record<string, number> = {};
  for (const d of byKind(objects, 'Deployment')) {
    if (databaseRoute(d) !== route) continue;
    const spec = SERVICES.find((s) => deploymentName(s) === d.metadata.name);
    if (spec === undefined) throw new Error(`${d.metadata.name}: not in services.ts, so its connections are unknown`);
    demand[d.metadata.name] = peakPods(objects, d) * spec.connections;
  }
  return demand;
}
/** Deployment names of the services.ts rows on `route` (the rendered DATABASE_URLs must agree). */
const servicesOn = (route: DatabaseRoute): string[] =>
  SERVICES.filter((s) => s.database === route)
    .map(deploymentName)
    .sort();
const total = (parts: Record<string, number>): number => Object.values(parts).reduce((a, b) => a + b, 0);

// Compiling the CRDs' schemas takes seconds (more on a busy machine): once, before any test.
beforeAll(() => compileCrdValidators(), 120_000);

const kubectl = spawnSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).stdout.trim();

describe('infra/k8s: generated files', () => {
  it('are what generate.ts produces from services.ts and infra/prometheus/alerts.yml (run `npx tsx infra/k8s/src/generate.ts`)', () => {
    for (const [path, content] of generatedFiles()) expect(readFileSync(join(K8S_DIR, path), 'utf8'), path).toBe(content);
  });

  it('carry alerts.yml into the PrometheusRule unchanged', () => {
    const rule = find(render('base'), 'PrometheusRule', 'herald');
    expect((rule['spec'] as Any).groups).toEqual((parse(readFileSync(ALERTS_FILE, 'utf8')) as Any).groups);
    expect(((rule['spec'] as Any).groups as Any[]).flatMap((g) => g.rules).length).toBeGreaterThan(10);
  });
});

describe.each(OVERLAYS)('infra/k8s/%s', (dir) => {
  const objects = render(dir);

  it('every object passes its schema (core API, KEDA, Prometheus Operator, RabbitMQ and CloudNativePG CRDs)', () => {
    const problems = objects.flatMap((o) => validateObject(o).map((p) => `${o.kind}/${o.metadata.name}: ${p}`));
    expect(problems).toEqual([]);
    const sources = new Set(objects.map(schemaSource));
    expect([...sources].sort()).toEqual([
      '@kubernetes-models/keda',
      '@kubernetes-models/prometheus-operator',
      'kubernetes-models',
      'vendor/cloudnative-pg/postgresql.cnpg.io_clusters.yaml',
      'vendor/cloudnative-pg/postgresql.cnpg.io_poolers.yaml',
      'vendor/rabbitmq-cluster-operator/rabbitmq.com_rabbitmqclusters.yaml',
    ]);
  });

  it.skipIf(kubectl === '')(
    'renders the same objects as `kubectl kustomize` (skipped where kubectl is not installed)',
    () => {
      const out = spawnSync(kubectl, ['kustomize', join(K8S_DIR, dir)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      expect(out.stderr).toBe('');
      const theirs = parseAllDocuments(out.stdout).map((d) => d.toJS() as K8sObject);
      const sorted = (list: K8sObject[]): K8sObject[] => [...list].sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
      expect(sorted(objects)).toEqual(sorted(theirs));
    },
    30_000,
  );

  it('runs every service npm start runs, from the one image, with the service chosen by argument', () => {
    const deployments = byKind(objects, 'Deployment');
    expect(deployments.map((d) => (podSpec(d).containers[0].args as string[])[0]).sort()).toEqual(
      LOCAL_SERVICES.map((s) => s.name).sort(),
    );
    const images = new Set(
      objects.flatMap((o) => (o.kind === 'Deployment' || o.kind === 'Job' ? podSpec(o).containers.map((c: Any) => c.image) : [])),
    );
    expect(images.size).toBe(1);
  });

  it('gives each Deployment start-up and liveness probes on /healthz and a readiness probe on /readyz (the API on /healthz), memory from the measured RSS, a grace period longer than the drain, a PDB and anti-affinity', () => {
    const config = find(objects, 'ConfigMap', Names.config)['data'] as Record<string, string>;
    const drainMs = Number(config['SHUTDOWN_TIMEOUT_MS']);
    for (const d of byKind(objects, 'Deployment')) {
      const spec = podSpec(d);
      const [container] = spec.containers as Any[];
      const portNames = new Set((container.ports as Any[]).map((p) => p.name));
      const readiness = d.metadata.name === 'herald-api' ? '/healthz' : '/readyz';
      for (const [probe, path] of [['startupProbe', '/healthz'], ['readinessProbe', readiness], ['livenessProbe', '/healthz']] as const) {
        expect(container[probe].httpGet, `${d.metadata.name} ${probe}`).toEqual({ path, port: 'metrics' });
      }
      expect(portNames.has('metrics')).toBe(true);
      const preStop = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      expect(spec.terminationGracePeriodSeconds * 1000, d.metadata.name).toBeGreaterThan(
        drainMs + SHUTDOWN_OVERRUN_MS + preStop * 1000,
      );
      expect(container.resources.requests.memory).toMatch(/^\d+Mi$/);
      expect(parseInt(container.resources.limits.memory, 10)).toBeGreaterThan(parseInt(container.resources.requests.memory, 10));
      expect(
        spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector
          .matchLabels,
      ).toEqual((d['spec'] as Any).selector.matchLabels);
      const pdb = find(objects, 'PodDisruptionBudget', d.metadata.name);
      expect((pdb['spec'] as Any).selector.matchLabels).toEqual((d['spec'] as Any).selector.matchLabels);
      // Pods left not ready by a RabbitMQ outage do not hold up a node drain.
      expect((pdb['spec'] as Any).unhealthyPodEvictionPolicy, d.metadata.name).toBe('AlwaysAllow');
    }
    for (const s of SERVICES) expect(gracePeriodSeconds(s) * 1000).toBeGreaterThan(drainMs + SHUTDOWN_OVERRUN_MS);
  });

  it('defines every $(VAR) a container uses before it, and reads only Secrets that exist or are optional', () => {
    const config = find(objects, 'ConfigMap', Names.config)['data'] as Record<string, string>;
    const operatorSecrets: Record<string, string[]> = {
      [Names.rabbitmqUser]: ['username', 'password', 'connection_string'],
      [Names.postgresApp]: ['username', 'password'],
    };
    const workloads = [...byKind(objects, 'Deployment'), ...byKind(objects, 'Job')];
    for (const w of workloads) {
      for (const c of podSpec(w).containers as Any[]) {
        const defined = new Set(Object.keys(config));
        for (const e of c.env as Any[]) {
          for (const m of String(e.value ?? '').matchAll(/\$\(([A-Z_]+)\)/g))
            expect(defined.has(m[1] as string), `${w.metadata.name}: $(${m[1]}) in ${e.name}`).toBe(true);
          defined.add(e.name);
          const ref = e.valueFrom?.secretKeyRef;
          if (ref !== undefined && ref.optional !== true)
            expect(operatorSecrets[ref.name], `${w.metadata.name}: ${ref.name}/${ref.key}`).toContain(ref.key);
        }
      }
    }
    const auth = find(objects, 'TriggerAuthentication', Names.kedaAuth)['spec'] as Any;
    for (const ref of auth.secretTargetRef) expect(operatorSecrets[ref.name]).toContain(ref.key);
  });

  it('scales every queue consumer with KEDA on the queue it consumes (queue names from libs/contracts)', () => {
    const scaled = byKind(objects, 'ScaledObject');
    const triggers = scaled.flatMap((so) =>
      ((so['spec'] as Any).triggers as Any[])
        .filter((t) => t.type === 'rabbitmq')
        .map((t) => ({ target: (so['spec'] as Any).scaleTargetRef.name, t })),
    );
    expect(new Set(triggers.map(({ t }) => t.metadata.queueName))).toEqual(new Set(WorkQueues));
    for (const { target, t } of triggers) {
      expect(Object.values(Queues)).toContain(t.metadata.queueName);
      expect(`herald-${consumedQueues().get(t.metadata.queueName)}`).toBe(target);
      expect(t.authenticationRef.name).toBe(Names.kedaAuth);
    }
    for (const so of scaled) {
      const spec = so['spec'] as Any;
      // No replicas of its own: each kubectl apply would set a scaled-out Deployment back to it.
      expect((find(objects, 'Deployment', spec.scaleTargetRef.name)['spec'] as Any).replicas, spec.scaleTargetRef.name).toBeUndefined();
      expect(spec.minReplicaCount).toBeGreaterThanOrEqual(2);
    }
    const targets = new Set(scaled.map((so) => (so['spec'] as Any).scaleTargetRef.name as string));
    for (const d of byKind(objects, 'Deployment').filter((d) => !targets.has(d.metadata.name))) {
      expect((d['spec'] as Any).replicas, d.metadata.name).toBeGreaterThanOrEqual(1);
    }
  });

  it("lists every RabbitMQ node in every AMQP_URL (and the monitor's RABBITMQ_API_URL)", () => {
    const replicas = (find(objects, 'RabbitmqCluster', Names.rabbitmq)['spec'] as Any).replicas as number;
    const config = find(objects, 'ConfigMap', Names.config)['data'] as Record<string, string>;
    const nodes = Array.from({ length: replicas }, (_, i) => config[`RABBITMQ_NODE_${i}`]);
    expect(nodes).toEqual(Array.from({ length: replicas }, (_, i) => `${Names.rabbitmq}-server-${i}.${Names.rabbitmq}-nodes`));
    const workloads = [...byKind(objects, 'Deployment'), ...byKind(objects, 'Job')];
    for (const w of workloads) {
      const env = podSpec(w).containers[0].env as Any[];
      for (const name of ['AMQP_URL', 'RABBITMQ_API_URL']) {
        const value = env.find((e) => e.name === name)?.value as string | undefined;
        if (value === undefined) continue;
        const hosts = value.split(',').map((u) => /@\$\((RABBITMQ_NODE_\d+)\):/.exec(u)?.[1]);
        expect(hosts, `${w.metadata.name} ${name}`).toEqual(Array.from({ length: replicas }, (_, i) => `RABBITMQ_NODE_${i}`));
      }
    }
  });

  it('runs RabbitMQ on 3 nodes, PostgreSQL on CloudNativePG with a transaction-mode Pooler, and migrations in a Job against the primary', () => {
    expect((find(objects, 'RabbitmqCluster', Names.rabbitmq)['spec'] as Any).replicas).toBe(3);
    expect((find(objects, 'Cluster', Names.postgres)['spec'] as Any).instances).toBeGreaterThanOrEqual(
      dir === 'overlays/dev' ? 2 : 3,
    );
    // A commit is on a replica before a service is told of it, so a failover loses none (dev: while the replica runs).
    expect((find(objects, 'Cluster', Names.postgres)['spec'] as Any).postgresql.synchronous).toEqual({ method: 'any', number: 1, dataDurability: dir === 'overlays/dev' ? 'preferred' : 'required', failoverQuorum: true });
    const pooler = find(objects, 'Pooler', Names.pooler)['spec'] as Any;
    expect(pooler.pgbouncer.poolMode).toBe('transaction');
    expect(pooler.cluster.name).toBe(Names.postgres);
    const job = find(objects, 'Job', 'herald-prepare');
    expect(podSpec(job).containers[0].args).toEqual(['prepare']);
    expect(JSON.stringify(podSpec(job))).toContain('$(POSTGRES_PRIMARY_HOST)');
  });

  it("gives PostgreSQL the connections every service may open at KEDA's maxima and a rollout's surge, the Pooler's, prepare's and the superuser reserve", () => {
    const parameters = (find(objects, 'Cluster', Names.postgres)['spec'] as Any).postgresql.parameters;
    const pooler = find(objects, 'Pooler', Names.pooler)['spec'] as Any;
    const bouncer = pooler.pgbouncer.parameters ?? {};
    const prepare = find(objects, 'Job', 'herald-prepare');
    expect(databaseRoute(prepare)).toBe('primary');
    const direct = connectionsAtPeak(objects, 'primary');
    expect(Object.keys(direct).sort()).toEqual(servicesOn('primary'));
    const needed = {
      ...direct,
      // Each Pooler instance opens up to default_pool_size (+ reserve_pool_size) server connections
      // for the one database and user Herald uses (PgBouncer's defaults: 20 and 0).
      pooler: pooler.instances * (Number(bouncer.default_pool_size ?? 20) + Number(bouncer.reserve_pool_size ?? 0)),
      prepare: ((prepare['spec'] as Any).parallelism ?? 1) * PREPARE_CONNECTIONS,
      superuserReserved: Number(parameters.superuser_reserved_connections ?? 3),
    };
    expect(Number(parameters.max_connections), JSON.stringify(needed)).toBeGreaterThanOrEqual(total(needed));
  });

  it("lets one Pooler instance take every client connection of the services behind it at KEDA's maxima and a rollout's surge", () => {
    // PgBouncer counts max_client_conn per instance, and the Pooler's Service sends each client
    // connection to one instance of its choosing: spread evenly, instances × max_client_conn would
    // do, but while instances are down (a node lost, a Pooler rollout) the rest take every client,
    // so one instance must be able to take them all (which also covers the even spread).
    const pooler = find(objects, 'Pooler', Names.pooler)['spec'] as Any;
    const clients = connectionsAtPeak(objects, 'pooler');
    expect(Object.keys(clients).sort()).toEqual(servicesOn('pooler'));
    const maxClientConn = Number(pooler.pgbouncer.parameters?.max_client_conn ?? 100); // PgBouncer's default: 100
    expect(maxClientConn, JSON.stringify(clients)).toBeGreaterThanOrEqual(total(clients));
  });

  it('scrapes every Herald Service as job herald-<service>, as alerts.yml expects', () => {
    const monitor = find(objects, 'ServiceMonitor', 'herald')['spec'] as Any;
    const services = byKind(objects, 'Service');
    for (const d of byKind(objects, 'Deployment')) {
      const svc = find(services, 'Service', d.metadata.name);
      expect(svc.metadata['labels']).toMatchObject(monitor.selector.matchLabels);
      expect(((svc['spec'] as Any).ports as Any[]).map((p) => p.name)).toContain(monitor.endpoints[0].port);
      expect(svc.metadata.name).toMatch(/^herald-/);
    }
    expect(readFileSync(ALERTS_FILE, 'utf8')).toContain('job=~"herald-.+"');
    // The metrics' own service label (apns-pusher), by which the alerts group, not the Operator's (the Service's name).
    expect(monitor.endpoints[0].honorLabels).toBe(true);
  });
});

describe('the validator refuses what a cluster would refuse', () => {
  const base = render('base');
  type Case = {
    kind: string;
    name: string;
    misspell: [string, string];
    wrongType: [string, unknown, RegExp];
    missing: [string, RegExp];
  };
  /** Dotted paths into a copy of a real object; [i] indexes arrays. */
  const at = (o: Any, path: string): { parent: Any; key: string } => {
    const parts = path.split('.').flatMap((p) => p.split(/\[(\d+)\]/).filter((x) => x !== ''));
    const key = parts.pop() as string;
    return { parent: parts.reduce((node, p) => node[p], o), key };
  };
  const cases: Case[] = [
    {
      kind: 'Deployment',
      name: 'herald-apns-pusher',
      misspell: ['spec.template.spec.containers[0].livenessProbe', 'livenesProbe'],
      wrongType: ['spec.replicas', 'two', /data\/spec\/replicas must be integer/],
      missing: ['spec.template.spec.containers[0].name', /must have required property '?name'?/],
    },
    {
      kind: 'ScaledObject',
      name: 'herald-apns-pusher',
      misspell: ['spec.minReplicaCount', 'minReplicaCountt'],
      wrongType: ['spec.maxReplicaCount', '40', /maxReplicaCount must be integer/],
      missing: ['spec.scaleTargetRef', /must have required property '?scaleTargetRef'?/],
    },
    {
      kind: 'PrometheusRule',
      name: 'herald',
      misspell: ['spec.groups[0].rules[0].annotations', 'anotations'],
      wrongType: ['spec.groups[0].rules[0].labels', ['critical'], /labels must be object/],
      missing: ['spec.groups[0].name', /must have required property '?name'?/],
    },
    {
      kind: 'RabbitmqCluster',
      name: Names.rabbitmq,
      misspell: ['spec.replicas', 'replica'],
      wrongType: ['spec.replicas', '3', /spec\/replicas must be integer/],
      missing: [
        'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey',
        /must have required property '?topologyKey'?/,
      ],
    },
    {
      kind: 'Cluster',
      name: Names.postgres,
      misspell: ['spec.bootstrap.initdb.owner', 'ownr'],
      wrongType: ['spec.storage.size', 50, /spec\/storage\/size must be string/],
      missing: ['spec.instances', /must have required property '?instances'?/],
    },
    {
      kind: 'Pooler',
      name: Names.pooler,
      misspell: ['spec.pgbouncer.poolMode', 'poolmode'],
      wrongType: ['spec.instances', 'three', /spec\/instances must be integer/],
      missing: ['spec.cluster', /must have required property '?cluster'?/],
    },
  ];

  describe.each(cases)('$kind', (c) => {
    const original = find(base, c.kind, c.name);
    const copy = (): Any => structuredClone(original);

    it('accepts the real object', () => expect(validateObject(original)).toEqual([]));

    it('refuses a misspelt field', () => {
      const o = copy();
      const { parent, key } = at(o, c.misspell[0]);
      expect(parent[key]).toBeDefined();
      parent[c.misspell[1]] = parent[key];
      delete parent[key];
      const problems = validateObject(o);
      const path = c.misspell[0].replace(/\[\d+\]/g, (m) => m).replace(/[^.]+$/, c.misspell[1]);
      expect(problems.join('\n')).toContain(`unknown field "${path}"`);
    });

    it('refuses a wrong type', () => {
      const o = copy();
      const { parent, key } = at(o, c.wrongType[0]);
      parent[key] = c.wrongType[1];
      expect(validateObject(o).join('\n')).toMatch(c.wrongType[2]);
    });

    it('refuses a missing required field', () => {
      const o = copy();
      const { parent, key } = at(o, c.missing[0]);
      expect(parent[key]).toBeDefined();
      delete parent[key];
      expect(validateObject(o).join('\n')).toMatch(c.missing[1]);
    });
  });

  it('refuses a kind it has no schema for, and a name the API server would refuse', () => {
    expect(validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      'no schema for example.com/v1/Widget: add its model or vendor its CRD',
    ]);
    const svc = structuredClone(find(base, 'Service', 'herald-api'));
    svc.metadata.name = 'Herald_API';
    expect(validateObject(svc)[0]).toMatch(/not a lower-case RFC 1123 name/);
  });

  it('finds misspelt fields deep inside lists and maps, and enum values a cluster would refuse', () => {
    const deployment: Any = structuredClone(find(base, 'Deployment', 'herald-api'));
    deployment.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.optinal = true;
    expect(validateObject(deployment)).toEqual([
      'unknown field "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.optinal"',
    ]);
    const scaled: Any = structuredClone(find(base, 'ScaledObject', 'herald-demuxer'));
    scaled.spec.triggers[1].authenticationRef.nam = 'x';
    expect(validateObject(scaled)).toEqual(['unknown field "spec.triggers[1].authenticationRef.nam"']);
    const monitor: Any = structuredClone(find(base, 'ServiceMonitor', 'herald'));
    monitor.spec.endpoints[0].intervall = '15s';
    expect(validateObject(monitor)).toEqual(['unknown field "spec.endpoints[0].intervall"']);
    const job: Any = structuredClone(find(base, 'Job', 'herald-prepare'));
    job.spec.template.spec.restartPolicy = 'Sometimes';
    expect(validateObject(job)[0]).toMatch(/restartPolicy must be equal to one of the allowed values/);
    const cluster: Any = structuredClone(find(base, 'Cluster', Names.postgres));
    cluster.spec.postgresql.parameters.max_connections = 600;
    expect(validateObject(cluster)).toEqual(['data/spec/postgresql/parameters/max_connections must be string']);
  });

  it('refuses unknown fields in metadata of custom resources too', () => {
    const o: Any = structuredClone(find(base, 'Pooler', Names.pooler));
    o.metadata.label = { a: 'b' };
    expect(validateObject(o)).toEqual(['unknown field "metadata.label"']);
  });
});
