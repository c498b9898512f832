import { z } from 'zod';

/**
 * A message on `push.fanout`: "expand chunk `chunk` of audience job `jobId`". The chunk's start
 * cursor and the job itself are read from PostgreSQL (fanouts, fanout_chunks), so a task is tiny
 * and a redelivered one finds the checkpoint another demuxer left.
 */
export const FanoutTask = z.strictObject({
  version: z.literal(1).default(1),
  jobId: z.string().min(1).max(200),
  chunk: z.number().int().min(0),
});
export type FanoutTask = z.infer<typeof FanoutTask>;
