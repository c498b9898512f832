import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyJsonPatch, JsonPatchError } from './json-patch.ts';
import { kustomizeBuild, KustomizeError } from './kustomize.ts';

describe('applyJsonPatch (RFC 6902)', () => {
  const doc = { spec: { replicas: 2, list: ['a', 'b'], 'x/y': { '~k': 1 } } };

  it('adds, replaces, removes and tests, leaving the input alone', () => {
    const out = applyJsonPatch(doc, [
      { op: 'test', path: '/spec/replicas', value: 2 },
      { op: 'replace', path: '/spec/replicas', value: 3 },
      { op: 'add', path: '/spec/list/1', value: 'between' },
      { op: 'add', path: '/spec/list/-', value: 'last' },
      { op: 'remove', path: '/spec/list/0' },
      { op: 'add', path: '/spec/new', value: { deep: true } },
      { op: 'remove', path: '/spec/x~1y/~0k' },
    ]);
    expect(out).toEqual({ spec: { replicas: 3, list: ['between', 'b', 'last'], new: { deep: true }, 'x/y': {} } });
    expect(doc.spec.replicas).toBe(2);
  });

  it('refuses to replace or remove what is not there, a failed test, and a bad index', () => {
    expect(() => applyJsonPatch(doc, [{ op: 'replace', path: '/spec/replica', value: 1 }])).toThrow(JsonPatchError);
    expect(() => applyJsonPatch(doc, [{ op: 'remove', path: '/spec/missing/deeper' }])).toThrow(/does not exist/);
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/spec/replicas', value: 5 }])).toThrow(/test failed/);
    expect(() => applyJsonPatch(doc, [{ op: 'add', path: '/spec/list/7', value: 'x' }])).toThrow(/out of range/);
  });
});

describe('kustomizeBuild (the subset our overlays use)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-kustomize-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string): void => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  write('base/kustomization.yaml', 'kind: Kustomization\nnamespace: one\nresources: [app.yaml]\n');
  write(
    'base/app.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers: [{name: c, image: "herald:latest"}, {name: d, image: "other:1"}]\n' +
      '---\napiVersion: v1\nkind: Service\nmetadata: {name: app}\n',
  );
  write(
    'overlay/kustomization.yaml',
    'kind: Kustomization\nresources: [../base]\nnamespace: two\nimages: [{name: herald, newName: reg.example/herald, newTag: "1.0"}]\nreplicas: [{name: app, count: 4}]\n' +
      'patches:\n  - target: {kind: Service, name: app}\n    patch: |-\n      - op: add\n        path: /spec\n        value: {type: ClusterIP}\n',
  );

  it('applies resources, namespace, images, replicas and JSON 6902 patches', () => {
    const [deployment, service] = kustomizeBuild(join(dir, 'overlay'));
    expect(deployment?.metadata.namespace).toBe('two');
    expect((deployment?.['spec'] as { replicas: number }).replicas).toBe(4);
    expect(JSON.stringify(deployment)).toContain('"image":"reg.example/herald:1.0"');
    expect(JSON.stringify(deployment)).toContain('"image":"other:1"');
    expect(service?.['spec']).toEqual({ type: 'ClusterIP' });
  });

  it('refuses what it does not implement, and a patch that matches nothing', () => {
    write('unsupported/kustomization.yaml', 'kind: Kustomization\nresources: [../base]\ncommonLabels: {a: b}\n');
    expect(() => kustomizeBuild(join(dir, 'unsupported'))).toThrow(/commonLabels not supported/);
    write(
      'nomatch/kustomization.yaml',
      'kind: Kustomization\nresources: [../base]\npatches:\n  - target: {kind: Service, name: nope}\n    patch: "[]"\n',
    );
    expect(() => kustomizeBuild(join(dir, 'nomatch'))).toThrow(KustomizeError);
  });
});
