import { z } from 'zod';

/** POST /admin/operator-keys: an operator key for one person (the dashboard, its write actions, the admin routes). */
export const OperatorKeyCreate = z.strictObject({
  /** Who the key is for; the audit log names them. */
  name: z.string().min(1).max(100),
});
export type OperatorKeyCreate = z.infer<typeof OperatorKeyCreate>;

/** The key is shown here once; Herald keeps only its SHA-256. */
export const OperatorKeyCreated = z.object({ id: z.string(), key: z.string(), name: z.string(), kind: z.literal('operator') });
export type OperatorKeyCreated = z.infer<typeof OperatorKeyCreated>;
