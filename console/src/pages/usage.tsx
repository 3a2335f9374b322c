/**
 * Usage: the charts of the stats object (`GET /v2/usage` for the signed-in token's account, or
 * the management API's `GET /v2/queue/stats/{id}` for an account on the Accounts pages), for
 * each period 1h … 30d (kept in the URL), and the month's daily requests, billing and bandwidth.
 */
import { useQuery } from '@tanstack/preact-query';
import { useMemo } from 'preact/hooks';
import { request } from '../api';
import { Chart, statsTime } from '../charts/chart';
import { ErrorBox, Loading, PageHeader } from '../components';
import { useUrlQuery } from '../filters';
import type { DataPoint, UsageStats } from '../types';

export const PERIODS = ['1h', '3h', '12h', '1d', '3d', '7d', '30d'] as const;

const COLORS: Record<string, string> = {
  published: '#1f5fbf',
  delivered: '#067647',
  retried: '#b54708',
  failed: '#b42318',
  canceled: '#5b6575',
};

const ys = (points: DataPoint[]): number[] => points.map((p) => p.y);

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit] ?? ''}`;
}

const dollars = (n: number): string => `$${n.toFixed(n < 1 ? 4 : 2)}`;

/** The stats object's charts. */
export function UsageCharts(props: { stats: UsageStats; period: string }) {
  const s = props.stats;
  const period = useMemo(() => {
    const xs = s.daily_used.map((p) => statsTime(p.x));
    const outcomes = s.daily_queue_messages.map((q) => ({
      label: q.id,
      values: ys(q.data_points),
      color: COLORS[q.id] ?? '#5b6575',
    }));
    const workflow = s.daily_workflow_messages.map((q) => ({
      label: q.id,
      values: ys(q.data_points),
      color: COLORS[q.id] ?? '#5b6575',
    }));
    return {
      xs,
      published: [
        { label: 'published', values: ys(s.daily_used), color: COLORS.published ?? '' },
        {
          label: 'workflow messages',
          values: ys(s.daily_used_workflow),
          color: '#7a2e9e',
        },
      ],
      outcomes,
      workflow,
    };
  }, [s]);
  const month = useMemo(() => {
    const xs = s.daily_requests.map((p) => statsTime(p.x));
    return {
      xs,
      requests: [
        { label: 'messages', values: ys(s.daily_requests), color: '#1f5fbf' },
        {
          label: 'workflow messages',
          values: s.daily_requests.map((p) => p.workflow_message),
          color: '#7a2e9e',
        },
        {
          label: 'workflow runs',
          values: s.daily_requests.map((p) => p.workflow_run),
          color: '#067647',
        },
      ],
      billing: [{ label: 'billing', values: ys(s.daily_billings), color: '#b54708' }],
      bandwidth: [{ label: 'bandwidth', values: ys(s.daily_bandwidths), color: '#5b6575' }],
    };
  }, [s]);
  return (
    <>
      <dl class="figures" aria-label="This month">
        <div>
          <dt>Billing this month</dt>
          <dd>{dollars(s.total_monthly_billing)}</dd>
        </div>
        <div>
          <dt>Messages this month</dt>
          <dd>{s.daily_requests.reduce((sum, p) => sum + p.y, 0).toLocaleString()}</dd>
        </div>
        <div>
          <dt>Bandwidth this month</dt>
          <dd>{bytes(s.daily_bandwidths.reduce((sum, p) => sum + p.y, 0))}</dd>
        </div>
        <div>
          <dt>In the DLQ</dt>
          <dd>{s.dlq_message_count.toLocaleString()}</dd>
        </div>
      </dl>
      <h2>Last {props.period}</h2>
      <div class="charts">
        <Chart title="Messages published" xs={period.xs} series={period.published} />
        <Chart title="Messages by outcome" xs={period.xs} series={period.outcomes} />
        <Chart title="Workflow messages by outcome" xs={period.xs} series={period.workflow} />
      </div>
      <h2>This month, by day (UTC)</h2>
      <div class="charts">
        <Chart title="Daily requests" xs={month.xs} series={month.requests} bars />
        <Chart title="Daily billing" xs={month.xs} series={month.billing} bars format={dollars} />
        <Chart title="Daily bandwidth" xs={month.xs} series={month.bandwidth} bars format={bytes} />
      </div>
    </>
  );
}

/** The period links and the charts of one stats endpoint. */
export function UsageView(props: { path: string; queryKey: unknown[] }) {
  const [params, setParams] = useUrlQuery();
  const chosen = params.get('period') ?? '1h';
  const period = (PERIODS as readonly string[]).includes(chosen) ? chosen : '1h';
  const stats = useQuery({
    queryKey: [...props.queryKey, period],
    queryFn: () => request<UsageStats>(props.path, { query: { period } }),
    refetchInterval: 30_000,
  });
  return (
    <>
      <nav class="tabs" aria-label="Period">
        {PERIODS.map((p) => (
          <a
            key={p}
            href={`?period=${p}`}
            aria-current={p === period ? 'page' : undefined}
            onClick={(event) => {
              event.preventDefault();
              setParams({ period: p });
            }}
          >
            {p}
          </a>
        ))}
      </nav>
      {stats.isPending ? (
        <Loading what="the usage" />
      ) : stats.isError ? (
        <ErrorBox error={stats.error} what="load the usage" />
      ) : (
        <UsageCharts stats={stats.data} period={period} />
      )}
    </>
  );
}

export function UsagePage() {
  return (
    <section>
      <PageHeader title="Usage" />
      <p class="muted">
        The account's metering: messages per step of the chosen period, and this month's requests,
        billing and bandwidth by day.
      </p>
      <UsageView path="/v2/usage" queryKey={['usage']} />
    </section>
  );
}
