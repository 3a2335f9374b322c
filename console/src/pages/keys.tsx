/** The account's signing keys and their rotation. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query';
import { request } from '../api';
import { ConfirmButton, ErrorBox, Loading, Notice, PageHeader } from '../components';
import type { SigningKeys } from '../types';

export function KeysPage() {
  const client = useQueryClient();
  const keys = useQuery({ queryKey: ['keys'], queryFn: () => request<SigningKeys>('/v2/keys') });
  const rotate = useMutation({
    mutationFn: () => request<SigningKeys>('/v2/keys/rotate', { method: 'POST' }),
    onSuccess: (fresh) => client.setQueryData(['keys'], fresh),
  });
  return (
    <section>
      <PageHeader title="Keys">
        <ConfirmButton
          label="Rotate keys"
          question="Rotate: the next key becomes current and a new next key is made. Receivers must know the new next key before the following rotation. Rotate now?"
          confirmLabel="Yes, rotate"
          onConfirm={() => rotate.mutate()}
        />
      </PageHeader>
      <p>
        Ferry signs every delivery with the <strong>current</strong> key. Receivers verify with both
        keys, so after a rotation (the next key becomes current, a fresh next key is made)
        deliveries still verify while you update receivers to the new pair.
      </p>
      {rotate.isSuccess && <Notice>Keys rotated.</Notice>}
      {rotate.isError && <ErrorBox error={rotate.error} what="rotate the keys" />}
      {keys.isPending ? (
        <Loading what="the keys" />
      ) : keys.isError ? (
        <ErrorBox error={keys.error} what="load the keys" />
      ) : (
        <dl class="facts">
          <dt>Current signing key</dt>
          <dd class="mono">{keys.data.current}</dd>
          <dt>Next signing key</dt>
          <dd class="mono">{keys.data.next}</dd>
        </dl>
      )}
    </section>
  );
}
