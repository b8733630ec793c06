import { signal } from '@preact/signals';
import { useState } from 'preact/hooks';
import { patch } from '../api';
import { realmAllows } from '../perm';
import { subs, topicDisplay } from '../store';
import type { Message } from '../types';
import { Dialog } from './Dialog';

const target = signal<Message | undefined>(undefined);

export function openMoveDialog(m: Message): void {
  target.value = m;
}

export function MoveDialog() {
  const m = target.value;
  if (m === undefined) return null;
  return <MoveForm m={m} key={m.id} />;
}

function MoveForm({ m }: { m: Message }) {
  const [topic, setTopic] = useState(m.subject);
  const [stream, setStream] = useState(String(m.stream_id));
  const [mode, setMode] = useState('change_all');
  const [err, setErr] = useState('');
  const canChangeChannel = realmAllows('realm_can_move_messages_between_channels_group');
  const close = () => { target.value = undefined; };
  const submit = async (e: Event) => {
    e.preventDefault();
    const params: Record<string, string | number> = { propagate_mode: mode };
    if (topic !== m.subject) params.topic = topic;
    if (stream !== String(m.stream_id)) params.stream_id = Number(stream);
    if (params.topic === undefined && params.stream_id === undefined) return close();
    try {
      await patch(`messages/${m.id}`, params);
      close();
    } catch (x) {
      setErr(x instanceof Error ? x.message : String(x));
    }
  };
  return (
    <Dialog title={`Move messages from “${topicDisplay(m.subject)}”`} onClose={close}>
      <form onSubmit={(e) => void submit(e)} class="stack">
        {canChangeChannel && (
          <label>Channel
            <select value={stream} onChange={(e) => setStream((e.target as HTMLSelectElement).value)}>
              {[...subs.value.values()].map((s) => <option key={s.stream_id} value={String(s.stream_id)}>{s.name}</option>)}
            </select>
          </label>
        )}
        <label>Topic
          <input type="text" value={topic} maxLength={60} onInput={(e) => setTopic((e.target as HTMLInputElement).value)} />
        </label>
        <label>Which messages
          <select value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value)}>
            <option value="change_one">Only this message</option>
            <option value="change_later">This and all following messages in the topic</option>
            <option value="change_all">All messages in the topic</option>
          </select>
        </label>
        {err && <p class="error" role="alert">{err}</p>}
        <div class="row">
          <button type="submit" class="primary">Move</button>
          <button type="button" onClick={close}>Cancel</button>
        </div>
      </form>
    </Dialog>
  );
}
