/**
 * RFC 6902 JSON Patch (add, remove, replace, test), the patch format our kustomize overlays use
 * (kustomize `patches` whose body is a list of operations). Pure: returns a patched copy.
 */
export interface PatchOperation {
  op: 'add' | 'remove' | 'replace' | 'test';
  path: string;
  value?: unknown;
}

export class JsonPatchError extends Error {
  override name = 'JsonPatchError';
}

/** `/a/b~1c/0` → ['a', 'b/c', '0'] (RFC 6901). */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new JsonPatchError(`JSON pointer "${pointer}" must start with /`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Container = Record<string, unknown> | unknown[];

const isContainer = (v: unknown): v is Container => typeof v === 'object' && v !== null;

function parentOf(doc: unknown, tokens: string[], path: string): { parent: Container; key: string } {
  let node = doc;
  for (const token of tokens.slice(0, -1)) {
    if (!isContainer(node)) throw new JsonPatchError(`path ${path}: ${token} is not inside an object or array`);
    node = Array.isArray(node) ? node[arrayIndex(node, token, path, false)] : node[token];
  }
  if (!isContainer(node)) throw new JsonPatchError(`path ${path}: parent does not exist`);
  return { parent: node, key: tokens[tokens.length - 1] as string };
}

function arrayIndex(array: unknown[], token: string, path: string, forAdd: boolean): number {
  if (forAdd && token === '-') return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new JsonPatchError(`path ${path}: "${token}" is not an array index`);
  const index = Number(token);
  if (index > array.length || (!forAdd && index === array.length))
    throw new JsonPatchError(`path ${path}: index ${index} is out of range`);
  return index;
}

function hasKey(parent: Container, key: string): boolean {
  return Array.isArray(parent) ? /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < parent.length : Object.hasOwn(parent, key);
}

/** Applies the operations in order to a deep copy of `doc`; throws JsonPatchError on any failure. */
export function applyJsonPatch<T>(doc: T, operations: readonly PatchOperation[]): T {
  let result: unknown = structuredClone(doc);
  for (const operation of operations) {
    const tokens = parsePointer(operation.path);
    if (tokens.length === 0) {
      if (operation.op === 'remove') throw new JsonPatchError('cannot remove the whole document');
      if (operation.op !== 'test') result = structuredClone(operation.value);
      continue;
    }
    const { parent, key } = parentOf(result, tokens, operation.path);
    switch (operation.op) {
      case 'add':
        if (Array.isArray(parent))
          parent.splice(arrayIndex(parent, key, operation.path, true), 0, structuredClone(operation.value));
        else parent[key] = structuredClone(operation.value);
        break;
      case 'replace':
      case 'remove':
        if (!hasKey(parent, key)) throw new JsonPatchError(`path ${operation.path} does not exist (${operation.op})`);
        if (operation.op === 'replace') {
          if (Array.isArray(parent)) parent[Number(key)] = structuredClone(operation.value);
          else parent[key] = structuredClone(operation.value);
        } else if (Array.isArray(parent)) parent.splice(Number(key), 1);
        else delete parent[key];
        break;
      case 'test': {
        const actual = Array.isArray(parent) ? parent[Number(key)] : parent[key];
        if (JSON.stringify(actual) !== JSON.stringify(operation.value))
          throw new JsonPatchError(`test failed at ${operation.path}`);
        break;
      }
    }
  }
  return result as T;
}
