/**
 * The console's frame: sign-in gate, navigation and routes. Every page has a URL of its own
 * under `/console`; the browser's history does the rest (deep links, back button).
 */
import { QueryClient, QueryClientProvider } from '@tanstack/preact-query';
import { useEffect, useState } from 'preact/hooks';
import { Link, Redirect, Route, Router, Switch, useLocation } from 'wouter-preact';
import { setUnauthorizedHandler } from './api';
import { AccountsPage, AccountUsagePage } from './pages/accounts';
import { DlqEntryPage, DlqPage } from './pages/dlq';
import { FlowControlPage } from './pages/flow-control';
import { KeysPage } from './pages/keys';
import { LogsPage } from './pages/logs';
import { MessageLogPage } from './pages/message-log';
import { MessagesPage } from './pages/messages';
import { NotFoundPage } from './pages/not-found';
import { OverviewPage } from './pages/overview';
import { PublishPage } from './pages/publish';
import { QueuesPage } from './pages/queues';
import { SchedulesPage } from './pages/schedules';
import { SignIn } from './pages/sign-in';
import { UrlGroupPage, UrlGroupsPage } from './pages/url-groups';
import { UsagePage } from './pages/usage';
import { WorkflowRunPage, WorkflowsPage } from './pages/workflows';
import { forgetAll, loadCredential, type Credential } from './session';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: { retry: false, refetchOnWindowFocus: false, staleTime: 2_000 },
  },
});

/** The navigation, in the order people look for things. */
const NAV = [
  ['Overview', '/overview'],
  ['Publish', '/publish'],
  ['Logs', '/logs'],
  ['Messages', '/messages'],
  ['DLQ', '/dlq'],
  ['Schedules', '/schedules'],
  ['URL groups', '/url-groups'],
  ['Queues', '/queues'],
  ['Flow control', '/flow-control'],
  ['Workflows', '/workflows'],
  ['Keys', '/keys'],
  ['Usage', '/usage'],
] as const;

/** The navigation with management credentials. */
const MANAGEMENT_NAV = [['Accounts', '/accounts']] as const;

function Nav(props: { entries: readonly (readonly [string, string])[] }) {
  const [location] = useLocation();
  return (
    <nav class="nav" aria-label="Console">
      <ul>
        {props.entries.map(([name, path]) => (
          <li key={path}>
            <Link
              href={path}
              aria-current={
                location === path || location.startsWith(`${path}/`) ? 'page' : undefined
              }
            >
              {name}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function Routes() {
  return (
    <Switch>
      <Route path="/">
        <Redirect to="/overview" replace />
      </Route>
      <Route path="/overview" component={OverviewPage} />
      <Route path="/logs" component={LogsPage} />
      <Route path="/logs/:messageId">
        {(params: { messageId: string }) => <MessageLogPage messageId={params.messageId} />}
      </Route>
      <Route path="/dlq" component={DlqPage} />
      <Route path="/dlq/:dlqId">
        {(params: { dlqId: string }) => <DlqEntryPage dlqId={params.dlqId} />}
      </Route>
      <Route path="/schedules" component={SchedulesPage} />
      <Route path="/url-groups" component={UrlGroupsPage} />
      <Route path="/url-groups/:name">
        {(params: { name: string }) => <UrlGroupPage name={params.name} />}
      </Route>
      <Route path="/workflows" component={WorkflowsPage} />
      <Route path="/workflows/runs/:runId">
        {(params: { runId: string }) => <WorkflowRunPage runId={params.runId} />}
      </Route>
      <Route path="/keys" component={KeysPage} />
      <Route path="/publish" component={PublishPage} />
      <Route path="/messages" component={MessagesPage} />
      <Route path="/queues" component={QueuesPage} />
      <Route path="/flow-control" component={FlowControlPage} />
      <Route path="/usage" component={UsagePage} />
      <Route path="/accounts">
        <NotFoundPage title="Accounts" management />
      </Route>
      <Route>
        <NotFoundPage title="Not found" />
      </Route>
    </Switch>
  );
}

function ManagementRoutes() {
  return (
    <Switch>
      <Route path="/accounts" component={AccountsPage} />
      <Route path="/accounts/:id">
        {(params: { id: string }) => <AccountUsagePage id={params.id} />}
      </Route>
      <Route>
        <Redirect to="/accounts" replace />
      </Route>
    </Switch>
  );
}

export function App() {
  const [credential, setCredential] = useState<Credential | undefined>(loadCredential);
  const signOut = (): void => {
    forgetAll();
    queryClient.clear();
    setCredential(undefined);
  };
  useEffect(() => setUnauthorizedHandler(signOut), []);
  const management = credential?.kind === 'management';

  return (
    <QueryClientProvider client={queryClient}>
      <Router base="/console">
        {credential ? (
          <div class="layout">
            <header class="topbar">
              <Link href={management ? '/accounts' : '/overview'} class="brand">
                Ferry
              </Link>
              {credential.kind === 'management' && (
                <span class="muted signed-in-as">Signed in as {credential.email}</span>
              )}
              <button type="button" class="sign-out" onClick={signOut}>
                Sign out
              </button>
            </header>
            <Nav entries={management ? MANAGEMENT_NAV : NAV} />
            <main class="content">{management ? <ManagementRoutes /> : <Routes />}</main>
          </div>
        ) : (
          <SignIn onSignedIn={setCredential} />
        )}
      </Router>
    </QueryClientProvider>
  );
}
