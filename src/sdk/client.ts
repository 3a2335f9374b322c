import { DlqApi } from './dlq.js';
import { EventsApi } from './events.js';
import { HttpClient } from './http.js';
import { KeysApi } from './keys.js';
import { MessagesApi } from './messages.js';
import { publishHeaders } from './publish.js';
import type {
  BatchRequest,
  BatchResult,
  PublishJsonRequest,
  PublishRequest,
  PublishResult,
} from './types.js';
import { UrlGroupsApi } from './url-groups.js';
import { SchedulesApi } from './schedules.js';
import { WorkflowsApi } from './workflows.js';
import { FlowControlApi } from './flow-control.js';
import { QueuesApi } from './queues.js';

/** Options of {@link FerryClient}. */
export interface FerryClientOptions {
  /** The server's messaging base URL, e.g. `http://localhost:8080` (a trailing `/` is ignored). */
  baseUrl: string;
  /** The account's messaging token, sent as `Authorization: Bearer <token>`. */
  token: string;
  /** The server's header prefix (`FERRY_HEADER_PREFIX`); default `Svc`. */
  headerPrefix?: string;
}

/**
 * A typed client for Ferry's messaging API. Needs only the global `fetch`, so it runs on Node 20+
 * and edge runtimes. Every non-2xx answer rejects with a `FerryApiError`.
 */
export class FerryClient {
  readonly messages: MessagesApi;
  readonly events: EventsApi;
  readonly dlq: DlqApi;
  readonly keys: KeysApi;
  readonly urlGroups: UrlGroupsApi;
  readonly schedules: SchedulesApi;
  /** Workflow runs: logs, cancel, the workflow DLQ, resume and restart. */
  readonly workflows: WorkflowsApi;
  readonly queues: QueuesApi;
  readonly flowControl: FlowControlApi;
  private readonly http: HttpClient;
  private readonly prefix: string;

  constructor(opts: FerryClientOptions) {
    this.http = new HttpClient(opts.baseUrl, `Bearer ${opts.token}`);
    this.prefix = opts.headerPrefix ?? 'Svc';
    this.messages = new MessagesApi(this.http);
    this.events = new EventsApi(this.http);
    this.dlq = new DlqApi(this.http);
    this.keys = new KeysApi(this.http);
    this.urlGroups = new UrlGroupsApi(this.http);
    this.schedules = new SchedulesApi(this.http, this.prefix);
    this.workflows = new WorkflowsApi(this.http);
    this.queues = new QueuesApi(this.http);
    this.flowControl = new FlowControlApi(this.http);
  }

  /**
   * Publishes into a FIFO queue (created with parallelism 1 on first use): the queue starts its
   * next message only after the previous one and its callbacks are delivered or failed.
   */
  async enqueue(queueName: string, req: PublishRequest): Promise<PublishResult> {
    if (req.destination === '') throw new TypeError('destination must not be empty');
    return this.http.request<PublishResult>({
      method: 'POST',
      path: `/v2/enqueue/${encodeURIComponent(queueName)}/${req.destination}`,
      headers: publishHeaders(this.prefix, req),
      body: req.body,
    });
  }

  /**
   * Publishes a message to a URL (one result) or a URL group (one result per endpoint). The
   * destination goes into the path as is, so a destination URL keeps its own query string.
   */
  async publish(req: PublishRequest): Promise<PublishResult> {
    if (req.destination === '') throw new TypeError('destination must not be empty');
    return this.http.request<PublishResult>({
      method: 'POST',
      path: `/v2/publish/${req.destination}`,
      headers: publishHeaders(this.prefix, req),
      body: req.body,
    });
  }

  /** {@link publish} with `body` JSON-encoded and `Content-Type: application/json` by default. */
  async publishJSON(req: PublishJsonRequest): Promise<PublishResult> {
    const { body, ...rest } = req;
    return this.publish({
      ...rest,
      contentType: rest.contentType ?? 'application/json',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  /**
   * Publishes many messages in one request, all or nothing: every entry is stored in one
   * transaction, or none is. The result has one publish result per entry, in order (an array for
   * a URL group). An invalid entry rejects the whole call with a `FerryApiError` naming it
   * (`entry <i>: …`, status 400, or 404/412/413 as the same publish alone would get).
   */
  async batch(requests: BatchRequest[]): Promise<BatchResult[]> {
    const entries = requests.map((req) => {
      if (req.destination === '') throw new TypeError('destination must not be empty');
      // Batch bodies travel inside JSON, so they must be text; invalid UTF-8 throws here.
      const body =
        req.body instanceof Uint8Array
          ? new TextDecoder('utf-8', { fatal: true }).decode(req.body)
          : req.body;
      return {
        destination: req.destination,
        headers: publishHeaders(this.prefix, req),
        body,
        ...(req.queue === undefined ? {} : { queue: req.queue }),
      };
    });
    return this.http.request<BatchResult[]>({
      method: 'POST',
      path: '/v2/batch',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(entries),
    });
  }
}
