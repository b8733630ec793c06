import { useState } from 'preact/hooks';
import { del, patch, post } from '../api';
import { narrowToHash } from '../narrow';
import { realmAllows } from '../perm';
import { closeOverlay, go } from '../route';
import { isAdmin, slugContext, streams, subs } from '../store';
import type { Subscription } from '../types';
import { Dialog } from './Dialog';
import { SafeHtml } from './SafeHtml';

async function setProp(s: Subscription, property: string, value: unknown): Promise<void> {
  await post('users/me/subscriptions/properties', { subscription_data: [{ stream_id: s.stream_id, property, value }] });
}

function SubSettings({ s }: { s: Subscription }) {
  return (
    <div class="sub-settings row">
      <label class="inline"><input type="checkbox" checked={s.is_muted} onChange={() => void setProp(s, 'is_muted', !s.is_muted)} /> Muted</label>
      <label class="inline"><input type="checkbox" checked={s.pin_to_top} onChange={() => void setProp(s, 'pin_to_top', !s.pin_to_top)} /> Pinned</label>
      <label class="inline">Colour <input type="color" value={s.color} onChange={(e) => void setProp(s, 'color', (e.target as HTMLInputElement).value)} /></label>
    </div>
  );
}

function AdminChannel({ id, name, description }: { id: number; name: string; description: string }) {
  const [n, setN] = useState(name);
  const [d, setD] = useState(description);
  const [err, setErr] = useState('');
  const run = (p: Promise<unknown>) => p.catch((x: unknown) => setErr(x instanceof Error ? x.message : String(x)));
  return (
    <details class="admin-channel">
      <summary>Edit channel</summary>
      <form class="stack" onSubmit={(e) => { e.preventDefault(); void run(patch(`streams/${id}`, { ...(n !== name ? { new_name: n } : {}), ...(d !== description ? { description: d } : {}) })); }}>
        <label>Name <input type="text" value={n} maxLength={60} onInput={(e) => setN((e.target as HTMLInputElement).value)} /></label>
        <label>Description <input type="text" value={d} onInput={(e) => setD((e.target as HTMLInputElement).value)} /></label>
        {err && <p class="error" role="alert">{err}</p>}
        <div class="row">
          <button type="submit">Save</button>
          <button type="button" class="danger" onClick={() => { if (confirm(`Archive #${name}?`)) void run(del(`streams/${id}`)); }}>Archive channel</button>
        </div>
      </form>
    </details>
  );
}

function CreateChannel({ onDone }: { onDone: () => void }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [priv, setPriv] = useState(false);
  const [err, setErr] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      await post('users/me/subscriptions', { subscriptions: [{ name, description }], invite_only: priv });
      onDone();
      go(narrowToHash([{ operator: 'channel', operand: name }], { ...slugContext }));
    } catch (x) {
      setErr(x instanceof Error ? x.message : String(x));
    }
  };
  return (
    <form class="stack create-channel" onSubmit={(e) => void submit(e)}>
      <h3>Create a channel</h3>
      <label>Name <input type="text" required value={name} maxLength={60} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
      <label>Description <input type="text" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} /></label>
      <label class="inline"><input type="checkbox" checked={priv} onChange={() => setPriv(!priv)} /> Private (invite only)</label>
      {err && <p class="error" role="alert">{err}</p>}
      <div class="row"><button type="submit" class="primary">Create</button><button type="button" onClick={onDone}>Cancel</button></div>
    </form>
  );
}

export function ChannelsOverlay() {
  const [creating, setCreating] = useState(false);
  const [q, setQ] = useState('');
  const [err, setErr] = useState('');
  const canCreate = realmAllows('realm_can_create_public_channel_group') || realmAllows('realm_can_create_private_channel_group');
  const list = [...streams.value.values()].filter((s) => !s.is_archived && s.name.toLowerCase().includes(q.toLowerCase()))
    .sort((a, b) => a.name.localeCompare(b.name));
  const run = (p: Promise<unknown>) => p.catch((x: unknown) => setErr(x instanceof Error ? x.message : String(x)));
  return (
    <Dialog title="Channels" onClose={closeOverlay} wide>
      {creating ? <CreateChannel onDone={() => setCreating(false)} /> : (
        <>
          <div class="row">
            <input type="search" placeholder="Filter channels" aria-label="Filter channels" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
            {canCreate && <button type="button" class="primary" onClick={() => setCreating(true)}>Create channel</button>}
          </div>
          {err && <p class="error" role="alert">{err}</p>}
          <ul class="channel-browser">
            {list.map((s) => {
              const sub = subs.value.get(s.stream_id);
              return (
                <li key={s.stream_id}>
                  <div class="row spread">
                    <div>
                      <a href={narrowToHash([{ operator: 'channel', operand: String(s.stream_id) }], slugContext)} class="channel-title">{s.invite_only ? '🔒 ' : '#'}{s.name}</a>
                      <SafeHtml class="rendered_markdown channel-description" html={s.rendered_description} />
                    </div>
                    {sub !== undefined
                      ? <button type="button" onClick={() => void run(del('users/me/subscriptions', { subscriptions: [s.name] }))}>Unsubscribe</button>
                      : <button type="button" class="primary" onClick={() => void run(post('users/me/subscriptions', { subscriptions: [{ name: s.name }] }))}>Subscribe</button>}
                  </div>
                  {sub !== undefined && <SubSettings s={sub} />}
                  {isAdmin() && <AdminChannel id={s.stream_id} name={s.name} description={s.description} />}
                </li>
              );
            })}
          </ul>
        </>
      )}
    </Dialog>
  );
}
