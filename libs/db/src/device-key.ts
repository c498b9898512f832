/** The identity of a device row: unique per (app, platform, token). */
export interface DeviceKey {
  app: string;
  platform: string;
  token: string;
}

export const deviceKey = (d: DeviceKey): string => `${d.app}\u0000${d.platform}\u0000${d.token}`;

/**
 * One statement cannot upsert/update the same row twice, so a batch keeps one item per device:
 * the one `wins` prefers (ties go to the later item). Returns the winners' indexes.
 */
export function pickOnePerDevice<T extends DeviceKey>(items: readonly T[], wins: (a: T, b: T) => boolean): number[] {
  const best = new Map<string, number>();
  items.forEach((item, i) => {
    const key = deviceKey(item);
    const current = best.get(key);
    const incumbent = current === undefined ? undefined : items[current];
    if (incumbent === undefined || !wins(incumbent, item)) best.set(key, i);
  });
  return [...best.values()].sort((a, b) => a - b);
}
