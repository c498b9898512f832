export { startSandbox, type Sandbox, type SandboxOptions } from './sandbox.ts';
export { SETTINGS_FILE, FCM_PROJECT_ID, type SandboxSettings } from './settings-file.ts';
export { ApnsFaultErrors, type ApnsFaultError, type FaultSpec } from './faults.ts';
export { FcmErrorCodes, type FcmErrorCode } from './google-errors.ts';
export type { RecordView, Stats } from './record-store.ts';
export type { DeliveryView } from './delivery-log.ts';
export type { DeviceSpec } from './device-control.ts';
export type { Pause } from './pause-log.ts';
