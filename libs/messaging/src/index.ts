export { connectBroker, consumingConnectionName } from './broker.ts';
export { applyTopologyWhenReachable, refusedByBroker, type ApplyTopologyOptions } from './apply-topology.ts';
export type {
  Broker,
  BrokerHealth,
  BrokerOptions,
  ConsumeOptions,
  Consumer,
  Decided,
  EachPublisher,
  InboundMessage,
  OutboundMessage,
  Outcome,
  ParkedNotice,
  Publisher,
  PublishOptions,
  QueueCounts,
} from './types.ts';
export {
  heraldTopology,
  workQueueTopology,
  retryTopology,
  mergeTopologies,
  workQueueSpec,
  parkedQueueSpec,
  delayQueueSpec,
  DEFAULT_DELIVERY_LIMIT,
  type Topology,
  type ExchangeSpec,
  type QueueSpec,
  type BindingSpec,
} from './topology.ts';
export { HeraldHeaders, handledBefore, webhookOwnerHeaders } from './headers.ts';
export { PACKED_CONTENT_TYPE, PACK_IDS_HEADER, packMessages, type Packed } from './pack.ts';
export {
  DEFAULT_JOB_PACK_SIZE,
  PublishNotSentError,
  coalescedPublish,
  type CoalescedPublishOptions,
} from './coalesced-publish.ts';
export { Headers } from '@herald/contracts';
export { RETRIES_EXHAUSTED, DELIVERY_LIMIT, MESSAGE_ERROR } from './settle.ts';
export { BrokerConnectError, BrokerUnavailableError, PublishFailedError, UnroutableError } from './errors.ts';
export {
  findParked,
  listParked,
  replayParked,
  purgeParked,
  parkedNameOf,
  matches as matchesParked,
  ReplayError,
  ParkedSweepStopped,
  type AgeFilter,
  type ParkedMessage,
  type RefusedReplay,
  type ReplayResult,
  type ParkedFilter,
  type ParkedOptions,
  type ReplayOptions,
} from './parked.ts';
export { PERMANENT_PARK_CODES, permanentRejection, describeRefusals } from './park-codes.ts';
/** The delay queues a retry schedule gets, LONGEST_DELAY_MS's included: for the tests that watch every queue holding work. */
export { delayQueuesOf } from './retry.ts';
/** The longest delay queue's wait, and the share a spread deferral may come back later than asked (retry.ts). */
export { JITTER, LONGEST_DELAY_MS } from './retry.ts';
