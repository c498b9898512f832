import { Exchanges, Queues, type FanoutTask } from '@herald/contracts';
import type { OutboundMessage } from '@herald/messaging';

/** "Expand chunk `chunk` of job `jobId`" on push.fanout; its messageId names the chunk. */
export function fanoutTaskMessage(jobId: string, chunk: number): OutboundMessage {
  const body: FanoutTask = { version: 1, jobId, chunk };
  return { exchange: Exchanges.jobs, routingKey: Queues.fanout, body, messageId: `${jobId}#${chunk}` };
}
