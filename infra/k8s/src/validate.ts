/**
 * Validates rendered Kubernetes objects offline against the schemas a cluster would enforce.
 *
 * - Core API kinds: kubernetes-models (schemas generated from Kubernetes' own OpenAPI).
 * - KEDA: @kubernetes-models/keda; Prometheus Operator: @kubernetes-models/prometheus-operator
 *   (both generated from the projects' CRDs).
 * - RabbitMQ Cluster Operator and CloudNativePG: the CRDs' openAPIV3Schema, vendored unchanged in
 *   infra/k8s/vendor/ (see its README for commits and licenses), compiled with ajv.
 *
 * Unknown fields are errors, as `kubectl apply` (strict field validation, the default since
 * Kubernetes 1.27) makes them: for the CRDs, every object schema that lists properties and does not
 * say x-kubernetes-preserve-unknown-fields gets additionalProperties: false; for the
 * kubernetes-models kinds, whose generated validators allow extra keys, a field the validator never
 * looks up while walking the object is one its schema does not define.
 * Not checked: CEL rules (x-kubernetes-validations), defaulting, and admission webhooks.
 */
import { join } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { formats } from '@kubernetes-models/validate';
import { ObjectMeta } from '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { readYamlDocuments, type K8sObject } from './kustomize.ts';

export const VENDOR_DIR = join(import.meta.dirname, '..', 'vendor');

/** Where each kind's schema comes from (the report and the spec print it). */
export type SchemaSource =
  'kubernetes-models' | '@kubernetes-models/keda' | '@kubernetes-models/prometheus-operator' | `vendor/${string}`;

interface ModelClass {
  prototype: { validate(): void };
}

const MODELS: Record<string, { model: ModelClass; source: SchemaSource }> = {
  'v1/ConfigMap': { model: ConfigMap, source: 'kubernetes-models' },
  'v1/Secret': { model: Secret, source: 'kubernetes-models' },
  'v1/Service': { model: Service, source: 'kubernetes-models' },
  'apps/v1/Deployment': { model: Deployment, source: 'kubernetes-models' },
  'batch/v1/Job': { model: Job, source: 'kubernetes-models' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, source: 'kubernetes-models' },
  'keda.sh/v1alpha1/ScaledObject': { model: ScaledObject, source: '@kubernetes-models/keda' },
  'keda.sh/v1alpha1/TriggerAuthentication': { model: TriggerAuthentication, source: '@kubernetes-models/keda' },
  'monitoring.coreos.com/v1/ServiceMonitor': { model: ServiceMonitor, source: '@kubernetes-models/prometheus-operator' },
  'monitoring.coreos.com/v1/PrometheusRule': { model: PrometheusRule, source: '@kubernetes-models/prometheus-operator' },
};

const CRDS: Record<string, string> = {
  'rabbitmq.com/v1beta1/RabbitmqCluster': 'rabbitmq-cluster-operator/rabbitmq.com_rabbitmqclusters.yaml',
  'postgresql.cnpg.io/v1/Cluster': 'cloudnative-pg/postgresql.cnpg.io_clusters.yaml',
  'postgresql.cnpg.io/v1/Pooler': 'cloudnative-pg/postgresql.cnpg.io_poolers.yaml',
};

const typeKey = (o: { apiVersion?: unknown; kind?: unknown }): string => `${String(o.apiVersion)}/${String(o.kind)}`;

export function schemaSource(o: K8sObject): SchemaSource | undefined {
  const key = typeKey(o);
  const crd = CRDS[key];
  return MODELS[key]?.source ?? (crd !== undefined ? `vendor/${crd}` : undefined);
}

/** Problems with one object, each naming the field; empty when a cluster would accept it. */
export function validateObject(o: K8sObject): string[] {
  const key = typeKey(o);
  const model = MODELS[key];
  const crd = CRDS[key];
  const problems: string[] = [];
  const name = o.metadata?.name;
  if (typeof name === 'string' && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name)) {
    problems.push(`metadata.name "${name}" is not a lower-case RFC 1123 name`);
  }
  if (model !== undefined) problems.push(...validateWithModel(model.model, o));
  else if (crd !== undefined) problems.push(...validateWithCrd(crd, key, o));
  else problems.push(`no schema for ${key}: add its model or vendor its CRD`);
  return problems;
}

// --- kubernetes-models: the generated validator, plus the unknown-field check -------------------

function validateWithModel(model: ModelClass, o: unknown): string[] {
  const { proxy, unknownFields } = recordLookups(o);
  try {
    model.prototype.validate.call(proxy);
  } catch (err) {
    return [(err as Error).message];
  }
  return unknownFields().map((path) => `unknown field "${path}"`);
}

/**
 * A view of `root` that remembers which keys of each object were looked up. The generated
 * validators look up every property their schema names (and every key of a map), so a key never
 * looked up is not in the schema.
 */
export function recordLookups(root: unknown): { proxy: unknown; unknownFields: () => string[] } {
  const lookedUp = new Map<object, Set<string>>();
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    let proxy = proxies.get(value);
    if (proxy === undefined) {
      const keys = new Set<string>();
      lookedUp.set(value, keys);
      proxy = new Proxy(value, {
        get(target, key, receiver) {
          if (typeof key === 'string') keys.add(key);
          return wrap(Reflect.get(target, key, receiver));
        },
      });
      proxies.set(value, proxy);
    }
    return proxy;
  };
  const unknownFields = (): string[] => {
    const found: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}[${i}]`));
      else if (typeof value === 'object' && value !== null) {
        const keys = lookedUp.get(value) ?? new Set<string>();
        for (const [key, child] of Object.entries(value)) {
          const childPath = path === '' ? key : `${path}.${key}`;
          if (!keys.has(key)) found.push(childPath);
          else walk(child, childPath);
        }
      }
    };
    walk(root, '');
    return found;
  };
  return { proxy: wrap(root), unknownFields };
}

// --- vendored CRDs: their openAPIV3Schema, strict, compiled with ajv --------------------------

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true });
for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format as never);
const compiled = new Map<string, ValidateFunction>();

interface CrdVersion {
  name: string;
  served: boolean;
  schema?: { openAPIV3Schema?: Record<string, unknown> };
}
interface Crd {
  kind: string;
  spec: { group: string; names: { kind: string }; versions: CrdVersion[] };
}

/** The CRD's schema for `apiVersion`, as a JSON Schema that refuses unknown fields. */
export function crdSchema(file: string, apiVersion: string): Record<string, unknown> {
  const [crd] = readYamlDocuments(join(VENDOR_DIR, file)) as Crd[];
  if (crd?.kind !== 'CustomResourceDefinition') throw new Error(`${file} is not a CustomResourceDefinition`);
  const version = crd.spec.versions.find((v) => `${crd.spec.group}/${v.name}` === apiVersion && v.served);
  const schema = version?.schema?.openAPIV3Schema;
  if (schema === undefined) throw new Error(`${file} serves no schema for ${apiVersion}`);
  return strictStructuralSchema(schema) as Record<string, unknown>;
}

/** Kubernetes structural-schema semantics in plain JSON Schema terms. */
export function strictStructuralSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictStructuralSchema);
  if (typeof node !== 'object' || node === null) return node;
  const src = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(src)) {
    // properties / patternProperties hold field names, not keywords: map each schema inside.
    out[key] =
      key === 'properties' && typeof value === 'object' && value !== null
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, strictStructuralSchema(v)]))
        : strictStructuralSchema(value);
  }
  if (src['x-kubernetes-int-or-string'] === true) {
    delete out['type'];
    out['anyOf'] = [{ type: 'integer' }, { type: 'string' }];
  }
  if (
    src['type'] === 'object' &&
    src['properties'] !== undefined &&
    src['additionalProperties'] === undefined &&
    src['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    out['additionalProperties'] = false;
  }
  return out;
}

/** Compiles every vendored CRD's validator now (a few seconds: the CloudNativePG schemas are large). */
export function compileCrdValidators(): void {
  for (const [key, file] of Object.entries(CRDS)) crdValidator(key, file);
}

function crdValidator(key: string, file: string): ValidateFunction {
  let validate = compiled.get(key);
  if (validate === undefined) {
    const apiVersion = key.slice(0, key.lastIndexOf('/'));
    validate = ajv.compile(crdSchema(file, apiVersion));
    compiled.set(key, validate);
  }
  return validate;
}

function validateWithCrd(file: string, key: string, o: K8sObject): string[] {
  const validate = crdValidator(key, file);
  const problems = validate(o) ? [] : (validate.errors ?? []).map(describe);
  // The CRD leaves metadata to the API server, which checks it against ObjectMeta.
  problems.push(
    ...validateWithModel(ObjectMeta, o.metadata).map((p) =>
      p.replace(/^data/, 'data/metadata').replace(/^unknown field "/, 'unknown field "metadata.'),
    ),
  );
  return problems;
}

function describe(e: ErrorObject): string {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
  if (e.keyword === 'additionalProperties') {
    const field = (e.params as { additionalProperty: string }).additionalProperty;
    return `unknown field "${path === '' ? field : `${path}.${field}`}"`;
  }
  return `data/${e.instancePath.replace(/^\//, '')} ${e.message ?? e.keyword}`.replace('data/ ', 'data ');
}
