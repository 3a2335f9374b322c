/**
 * Query parameters of the workflow endpoints (logs, DLQ, bulk resume/restart/delete, bulk
 * cancel) as a `WorkflowRunFilter`. Multi-value filters come repeated or comma-joined; unknown
 * parameters are a 400, so a typo never widens a bulk action.
 */
import { badRequest } from '../core/errors.js';
import {
  FAILURE_FUNCTION_STATES,
  WORKFLOW_RUN_STATES,
  type FailureFunctionState,
  type WorkflowRunState,
} from '../core/workflow.js';
import type { WorkflowRunFilter } from '../storage/driver.js';
import { TOKEN_PARAMS } from '../core/destination.js';

export interface WorkflowQuery {
  filter: WorkflowRunFilter;
  cursor?: string;
  count?: number;
  /** Some filter (or `dlqIds`) was given: a bulk action without one needs `count` or `all`. */
  filtered: boolean;
}

const LIST: Record<string, keyof WorkflowRunFilter> = {
  workflowRunId: 'runIds',
  workflowRunIds: 'runIds',
  label: 'labels',
  callerIp: 'callerIps',
  callerIP: 'callerIps',
  flowControlKey: 'flowControlKeys',
  dlqId: 'dlqIds',
  dlqIds: 'dlqIds',
};

/** Filters only some endpoints take (in their `accepted`): name → field. */
const OPTIONAL_LIST: Record<string, 'hosts' | 'paths' | 'messageIds'> = {
  host: 'hosts',
  path: 'paths',
  messageId: 'messageIds',
};

function values(params: URLSearchParams, name: string): string[] {
  return [...params.getAll(name), ...params.getAll(`${name}[]`)]
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

function integer(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw badRequest(`invalid ${name} "${text}": must be an integer from ${min} to ${max}`);
  }
  return value;
}

function oneOf<T extends string>(name: string, text: string, known: readonly T[]): T {
  const found = known.find((k) => k === text.toUpperCase());
  if (!found) throw badRequest(`invalid ${name} "${text}" (known: ${known.join(', ')})`);
  return found;
}

/**
 * @param accepted the parameter names this endpoint takes besides the filters of `LIST`,
 *   `workflowUrl`, `workflowCreatedAt`, `fromDate`, `toDate`, `cursor` and `count`.
 */
export function parseWorkflowQuery(
  params: URLSearchParams,
  p: { maxCount: number; accepted?: readonly string[]; ignored?: readonly string[] },
): WorkflowQuery {
  const allowed = new Set([
    ...Object.keys(LIST),
    'workflowUrl',
    'workflowUrlExactMatch',
    'workflowCreatedAt',
    'fromDate',
    'toDate',
    'cursor',
    'count',
    ...(p.accepted ?? []),
    ...(p.ignored ?? []),
  ]);
  for (const name of new Set(params.keys())) {
    const bare = name.endsWith('[]') ? name.slice(0, -2) : name;
    if (!allowed.has(bare) && !TOKEN_PARAMS.has(name)) {
      throw badRequest(`unknown query parameter "${name}" (accepted: ${[...allowed].join(', ')})`);
    }
  }
  const filter: WorkflowRunFilter = {};
  for (const [name, key] of Object.entries(LIST)) {
    const list = values(params, name);
    if (list.length === 0) continue;
    const target = (filter[key] ?? []) as string[];
    (filter as Record<string, unknown>)[key] = [...target, ...list];
  }
  const urls = values(params, 'workflowUrl');
  if (urls.length > 0) {
    // The SDK's bulk cancel sends `workflowUrlExactMatch=true` for an exact URL; without it a
    // cancel's URL is a prefix. Elsewhere the URL filter is exact.
    const exact = params.get('workflowUrlExactMatch');
    if (exact !== null || !p.accepted?.includes('workflowUrlExactMatch')) filter.urls = urls;
    else filter.urlPrefixes = urls;
    if (exact === 'false') {
      delete filter.urls;
      filter.urlPrefixes = urls;
    }
  }
  for (const [name, key] of Object.entries(OPTIONAL_LIST)) {
    const list = values(params, name);
    if (list.length > 0 && p.accepted?.includes(name)) filter[key] = list;
  }
  const statuses = values(params, 'responseStatus');
  if (statuses.length > 0 && p.accepted?.includes('responseStatus')) {
    filter.responseStatuses = statuses.map((s) => integer('responseStatus', s, 100, 999));
  }
  const url = values(params, 'url');
  if (url.length > 0 && p.accepted?.includes('url')) filter.urls = [...(filter.urls ?? []), ...url];
  const states = values(params, 'state');
  if (states.length > 0) {
    filter.states = states.map((s) => oneOf<WorkflowRunState>('state', s, WORKFLOW_RUN_STATES));
  }
  const failure = values(params, 'failureFunctionState');
  if (failure.length > 0) {
    filter.failureFunctionStates = failure.map((s) =>
      oneOf<FailureFunctionState>('failureFunctionState', s, FAILURE_FUNCTION_STATES),
    );
  }
  for (const name of ['fromDate', 'toDate', 'workflowCreatedAt'] as const) {
    const text = params.get(name);
    if (text === null || text === '') continue;
    const value = integer(name, text, 0, Number.MAX_SAFE_INTEGER);
    if (name === 'workflowCreatedAt') filter.createdAt = value;
    else filter[name] = value;
  }
  const result: WorkflowQuery = {
    filter,
    filtered: Object.keys(filter).length > 0,
  };
  const cursor = params.get('cursor');
  if (cursor) {
    if (!/^(dlq_[A-Za-z0-9_-]+|\d+_[A-Za-z0-9_.-]+)$/.test(cursor)) {
      throw badRequest(`invalid cursor "${cursor}": pass back the cursor of the previous page`);
    }
    result.cursor = cursor;
  }
  const count = params.get('count');
  if (count !== null && count !== '') result.count = integer('count', count, 1, p.maxCount);
  if (result.filter.dlqIds) {
    // interface.md: when `dlqIds` is given, every other filter is ignored.
    result.filter = { dlqIds: result.filter.dlqIds };
  }
  return result;
}
