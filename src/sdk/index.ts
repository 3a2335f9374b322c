/** Ferry's client SDK: `import { FerryClient, Receiver } from 'ferry/sdk'`. */
export { FerryClient } from './client.js';
export type { FerryClientOptions } from './client.js';
export { FerryAdmin } from './admin.js';
export type { AccountsAdminApi, FerryAdminOptions, SearchAdminApi } from './admin.js';
export type * from './admin-types.js';
export { Receiver } from './receiver.js';
export type { ReceiverOptions, VerifyParams } from './receiver.js';
export { FerryApiError, SignatureError, rateLimitOf } from './errors.js';
export type { RateLimitInfo, SignatureErrorCode } from './errors.js';
export type { DlqApi } from './dlq.js';
export type { EventsApi } from './events.js';
export type { KeysApi } from './keys.js';
export type { FlowControlApi, FlowControlKey } from './flow-control.js';
export type { QueuesApi, Queue } from './queues.js';
export type { MessagesApi } from './messages.js';
export type { UrlGroupsApi } from './url-groups.js';
export type { SchedulesApi } from './schedules.js';
export type * from './types.js';
export { WorkflowsApi } from './workflows.js';
export type {
  ResumedRun,
  WorkflowDlqMessage,
  WorkflowDlqSelection,
  WorkflowFilter,
  WorkflowRun,
} from './workflows.js';
