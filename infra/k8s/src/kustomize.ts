/**
 * The part of kustomize our overlays use, in TypeScript, so `npm test` renders every overlay
 * without a kustomize binary (CI machines have none; where `kubectl` is installed the spec also
 * checks that `kubectl kustomize` gives the same objects). A kustomization that uses anything
 * else is refused, never half-applied:
 *   resources (YAML files and directories holding a kustomization.yaml), namespace,
 *   images (name → newName / newTag / digest), replicas (name → count),
 *   patches with a target {kind, name} whose body is a JSON 6902 operation list.
 */
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyJsonPatch, type PatchOperation } from './json-patch.ts';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export class KustomizeError extends Error {
  override name = 'KustomizeError';
}

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}
interface PatchRule {
  path?: string;
  patch?: string;
  target: { kind: string; name: string };
}
interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: ImageRule[];
  replicas?: Array<{ name: string; count: number }>;
  patches?: PatchRule[];
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'replicas', 'patches']);
const SCALABLE = new Set(['Deployment', 'StatefulSet', 'ReplicaSet']);

/** Every YAML document of a file, as objects (empty documents skipped). */
export function readYamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc, i) => {
      if (doc.errors.length > 0) throw new KustomizeError(`${file} document ${i + 1}: ${doc.errors[0]?.message ?? 'YAML error'}`);
      return doc.toJS() as unknown;
    })
    .filter((doc) => doc !== null && doc !== undefined);
}

function asObject(doc: unknown, where: string): K8sObject {
  const o = doc as Partial<K8sObject> | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    typeof o.apiVersion !== 'string' ||
    typeof o.kind !== 'string' ||
    typeof o.metadata?.name !== 'string'
  ) {
    throw new KustomizeError(`${where}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
  }
  return o as K8sObject;
}

export const objectKey = (o: K8sObject): string => `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

function readKustomization(dir: string): Kustomization {
  const file = join(dir, 'kustomization.yaml');
  const [doc] = readYamlDocuments(file) as Array<Record<string, unknown>>;
  if (doc === undefined || doc['kind'] !== 'Kustomization') throw new KustomizeError(`${file}: not a Kustomization`);
  const unsupported = Object.keys(doc).filter((k) => !SUPPORTED.has(k));
  if (unsupported.length > 0) throw new KustomizeError(`${file}: ${unsupported.join(', ')} not supported by this renderer`);
  return doc as Kustomization;
}

/** Renders the kustomization in `dir` (like `kustomize build dir`). */
export function kustomizeBuild(dir: string): K8sObject[] {
  const root = resolve(dir);
  const k = readKustomization(root);
  let objects: K8sObject[] = [];
  for (const entry of k.resources ?? []) {
    const path = resolve(root, entry);
    if (statSync(path).isDirectory()) objects.push(...kustomizeBuild(path));
    else objects.push(...readYamlDocuments(path).map((doc, i) => asObject(doc, `${path} document ${i + 1}`)));
  }
  const seen = new Set<string>();
  for (const o of objects) {
    const key = objectKey(o);
    if (seen.has(key)) throw new KustomizeError(`${root}: ${key} is defined twice`);
    seen.add(key);
  }
  for (const rule of k.patches ?? []) objects = applyPatchRule(objects, rule, root);
  if (k.namespace !== undefined) {
    const namespace = k.namespace;
    objects = objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
  }
  for (const rule of k.replicas ?? []) objects = applyReplicas(objects, rule, root);
  for (const rule of k.images ?? []) objects = objects.map((o) => applyImage(o, rule));
  return objects;
}

function applyPatchRule(objects: K8sObject[], rule: PatchRule, root: string): K8sObject[] {
  if (rule.target?.kind === undefined || rule.target.name === undefined)
    throw new KustomizeError(`${root}: a patch needs target.kind and target.name`);
  const body = rule.path !== undefined ? readFileSync(join(root, rule.path), 'utf8') : rule.patch;
  const ops = body === undefined ? undefined : (readYamlDocumentsFromText(body)[0] as unknown);
  if (!Array.isArray(ops)) throw new KustomizeError(`${root}: patch ${rule.path ?? ''} is not a JSON 6902 operation list`);
  let matched = 0;
  const result = objects.map((o) => {
    if (o.kind !== rule.target.kind || o.metadata.name !== rule.target.name) return o;
    matched++;
    return applyJsonPatch(o, ops as PatchOperation[]);
  });
  if (matched === 0) throw new KustomizeError(`${root}: patch target ${rule.target.kind}/${rule.target.name} matches nothing`);
  return result;
}

function readYamlDocumentsFromText(text: string): unknown[] {
  return parseAllDocuments(text).map((d) => d.toJS() as unknown);
}

function applyReplicas(objects: K8sObject[], rule: { name: string; count: number }, root: string): K8sObject[] {
  let matched = 0;
  const result = objects.map((o) => {
    if (!SCALABLE.has(o.kind) || o.metadata.name !== rule.name) return o;
    matched++;
    return { ...o, spec: { ...(o['spec'] as object), replicas: rule.count } };
  });
  if (matched === 0) throw new KustomizeError(`${root}: replicas for ${rule.name} match no workload`);
  return result;
}

/** Splits `registry:5000/herald:1.2@sha256:…` into the name and what follows it. */
function imageName(image: string): string {
  const at = image.indexOf('@');
  const noDigest = at >= 0 ? image.slice(0, at) : image;
  const colon = noDigest.lastIndexOf(':');
  return colon > noDigest.lastIndexOf('/') ? noDigest.slice(0, colon) : noDigest;
}

function applyImage<T>(node: T, rule: ImageRule): T {
  if (Array.isArray(node)) return node.map((n: unknown) => applyImage(n, rule)) as T;
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(value)) {
      out[key] = value.map((c: Record<string, unknown>) =>
        typeof c['image'] === 'string' && imageName(c['image']) === rule.name
          ? { ...c, image: renamed(c['image'], rule) }
          : applyImage(c, rule),
      );
    } else out[key] = applyImage(value, rule);
  }
  return out as T;
}

function renamed(image: string, rule: ImageRule): string {
  const name = rule.newName ?? imageName(image);
  if (rule.digest !== undefined) return `${name}@${rule.digest}`;
  if (rule.newTag !== undefined) return `${name}:${rule.newTag}`;
  return name + image.slice(imageName(image).length);
}
