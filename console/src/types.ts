/** The API's shapes, from the SDK (types only: the console is a client of the HTTP API). */
import type { DlqMessage, Event } from '../../src/sdk/types';

export type {
  DlqMessage,
  Event,
  EventState,
  HeaderMap,
  Schedule,
  SigningKeys,
  UrlGroup,
} from '../../src/sdk/types';

/** `GET /v2/events`: `cursor` is absent on the last page. */
export interface EventPage {
  cursor?: string;
  events: Event[];
}

/** `GET /v2/dlq`: `cursor` is absent on the last page. */
export interface DlqPage {
  cursor?: string;
  messages: DlqMessage[];
}
