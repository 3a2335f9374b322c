/**
 * A failure with an HTTP meaning. Thrown anywhere below the API; the API's error handler is the
 * one place that maps it to a response (`{"error": message}` with `status`).
 */
export class FerryError extends Error {
  constructor(
    readonly status: number,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FerryError';
    this.headers = options?.headers;
  }

  /** Extra response headers (rate-limit headers on a 429, for instance). */
  readonly headers: Record<string, string> | undefined;
}

export const badRequest = (message: string): FerryError => new FerryError(400, message);
export const unauthorized = (message = 'missing or invalid token'): FerryError =>
  new FerryError(401, message);
export const notFound = (message: string): FerryError => new FerryError(404, message);
export const limitExceeded = (message: string): FerryError => new FerryError(412, message);
export const tooLarge = (message: string): FerryError => new FerryError(413, message);
