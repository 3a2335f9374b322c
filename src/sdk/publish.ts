import type { CallbackOptions, FlowControlOptions, PublishRequest } from './types.js';

/** A duration option: strings (`'10s'`, `'1d2h'`) go as is, numbers are seconds. */
const duration = (value: string | number): string =>
  typeof value === 'number' ? `${value}s` : value;

/** `parallelism=<n>, rate=<n>, period=<duration>`: the `<P>-Flow-Control-Value` header. */
export function flowControlValue(fc: FlowControlOptions): string {
  if (fc.parallelism === undefined && fc.rate === undefined) {
    throw new TypeError(`flowControl for key "${fc.key}" needs parallelism or rate`);
  }
  const parts: string[] = [];
  if (fc.parallelism !== undefined) parts.push(`parallelism=${fc.parallelism}`);
  if (fc.rate !== undefined) parts.push(`rate=${fc.rate}`);
  if (fc.period !== undefined) parts.push(`period=${duration(fc.period)}`);
  return parts.join(', ');
}

/**
 * The headers of a publish: one `<prefix>-…` header per option, forwarded headers as
 * `<prefix>-Forward-<name>`, then `rawHeaders` unchanged (they win on a clash). Pure, so the
 * mapping is testable without a server.
 */
export function publishHeaders(prefix: string, req: PublishRequest): Record<string, string> {
  const h: Record<string, string> = {};
  const set = (name: string, value: string | number | boolean | undefined): void => {
    if (value !== undefined) h[`${prefix}-${name}`] = String(value);
  };
  if (req.contentType !== undefined) h['Content-Type'] = req.contentType;
  for (const [name, value] of Object.entries(req.headers ?? {})) set(`Forward-${name}`, value);
  set('Method', req.method);
  set('Delay', req.delay === undefined ? undefined : duration(req.delay));
  set('Not-Before', req.notBefore);
  set('Retries', req.retries);
  set('Retry-Delay', req.retryDelay);
  set('Timeout', req.timeout === undefined ? undefined : duration(req.timeout));
  set('Label', Array.isArray(req.label) ? req.label.join(',') : req.label);
  set('Deduplication-Id', req.deduplicationId);
  set('Content-Based-Deduplication', req.contentBasedDeduplication);
  if (req.flowControl !== undefined) {
    set('Flow-Control-Key', req.flowControl.key);
    set('Flow-Control-Value', flowControlValue(req.flowControl));
  }
  set('Header-Forward', req.headerForward);
  set('Redact-Fields', req.redactFields?.join(', '));
  const callbacks: [string, string | CallbackOptions | undefined][] = [
    ['Callback', req.callback],
    ['Failure-Callback', req.failureCallback],
  ];
  for (const [kind, option] of callbacks) {
    if (option === undefined) continue;
    const cb = typeof option === 'string' ? { url: option } : option;
    set(kind, cb.url);
    for (const [name, value] of Object.entries(cb.headers ?? {}))
      set(`${kind}-Forward-${name}`, value);
    set(`${kind}-Method`, cb.method);
    set(`${kind}-Timeout`, cb.timeout === undefined ? undefined : duration(cb.timeout));
    set(`${kind}-Retries`, cb.retries);
    set(`${kind}-Retry-Delay`, cb.retryDelay);
    set(`${kind}-Delay`, cb.delay === undefined ? undefined : duration(cb.delay));
  }
  for (const [name, value] of Object.entries(req.rawHeaders ?? {})) {
    // Header names are case-insensitive: a raw header replaces a built one of any casing.
    for (const built of Object.keys(h)) {
      if (built.toLowerCase() === name.toLowerCase()) delete h[built];
    }
    h[name] = value;
  }
  return h;
}
