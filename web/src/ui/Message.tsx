import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, del, get, patch, post } from '../api';
import { Emoji, emojiChar, type EmojiChoice } from '../emoji';
import { narrowToHash } from '../narrow';
import { canDelete, canEdit, canMoveTopic } from '../perm';
import { me, messages, slugContext, userName, users } from '../store';
import type { Message, Reaction } from '../types';
import { EmojiPicker } from './EmojiPicker';
import { SafeHtml } from './SafeHtml';
import { openMoveDialog } from './MoveDialog';
import { composeContent, openCompose } from '../compose';
import { Avatar } from './Avatar';
import { Icon } from './Icon';
import { formatFull, formatTime, memo } from './util';
import { openUserCard } from './UserCard';
import { openEditHistory } from './EditHistory';
import { openReadReceipts, readReceiptsEnabled } from './ReadReceipts';

export async function toggleReaction(m: Message, e: { emoji_name: string; emoji_code: string; reaction_type: string }): Promise<void> {
  const mine = m.reactions.some((r) => r.user_id === me.value && r.emoji_code === e.emoji_code && r.reaction_type === e.reaction_type);
  try {
    if (mine) await del(`messages/${m.id}/reactions`, e);
    else await post(`messages/${m.id}/reactions`, e);
  } catch (err) {
    if (!(err instanceof ApiError) || !['REACTION_ALREADY_EXISTS', 'REACTION_DOES_NOT_EXIST'].includes(err.code)) throw err;
  }
}

export async function toggleStar(m: Message): Promise<void> {
  const starred = m.flags.includes('starred');
  await post('messages/flags', { messages: [m.id], op: starred ? 'remove' : 'add', flag: 'starred' });
}

function groupReactions(reactions: Reaction[]) {
  const groups = new Map<string, { r: Reaction; users: number[] }>();
  for (const r of reactions) {
    const key = `${r.reaction_type},${r.emoji_code}`;
    const g = groups.get(key);
    if (g === undefined) groups.set(key, { r, users: [r.user_id] });
    else g.users.push(r.user_id);
  }
  return [...groups.entries()];
}

function Reactions({ m }: { m: Message }) {
  const groups = groupReactions(m.reactions);
  if (groups.length === 0) return null;
  const showNames = m.reactions.length <= 3;
  return (
    <div class="message_reactions">
      {groups.map(([key, g]) => {
        const reacted = g.users.includes(me.value);
        const names = g.users.map((u) => (u === me.value ? 'You' : userName(u)));
        const label = `${names.join(', ')} reacted with :${g.r.emoji_name}:`;
        return (
          <button type="button" key={key} data-reaction-id={key} class={`message_reaction${reacted ? ' reacted' : ''}`}
            aria-pressed={reacted} title={label} aria-label={label}
            onClick={() => void toggleReaction(m, g.r)}>
            <Emoji type={g.r.reaction_type} code={g.r.emoji_code} name={g.r.emoji_name} />
            <span class="message_reaction_count">{showNames ? names.join(', ') : g.users.length}</span>
          </button>
        );
      })}
    </div>
  );
}

function EditBox({ m, onDone }: { m: Message; onDone: () => void }) {
  const [text, setText] = useState<string | undefined>(undefined);
  const [original, setOriginal] = useState('');
  const [err, setErr] = useState('');
  useEffect(() => {
    void get<{ message: Message }>(`messages/${m.id}`, { apply_markdown: false })
      .then((r) => { setOriginal(r.message.content); setText(r.message.content); })
      .catch((e: unknown) => setErr(e instanceof Error ? e.message : String(e)));
  }, [m.id]);
  const save = async () => {
    try {
      if (text !== undefined && text !== original) await patch(`messages/${m.id}`, { content: text });
      onDone();
    } catch (e) {
      setErr(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <div class="message-edit">
      <label class="sr-only" for={`edit-${m.id}`}>Edit message</label>
      <textarea id={`edit-${m.id}`} value={text ?? ''} disabled={text === undefined} rows={Math.min(12, (text ?? '').split('\n').length + 1)}
        ref={(el) => el?.focus()}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') { e.stopPropagation(); onDone(); }
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); void save(); }
        }} />
      {err && <p class="error" role="alert">{err}</p>}
      <div class="row">
        <button type="button" class="primary" onClick={() => void save()}>Save</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </div>
  );
}

const IMAGE = /\.(png|jpe?g|gif|webp|avif|bmp)$/i;

/** Links to uploaded images without the server's preview get one (built with DOM calls). */
function addUploadPreviews(root: HTMLElement): void {
  const shown = new Set([...root.querySelectorAll('.message_inline_image a')].map((a) => a.getAttribute('href')));
  for (const a of root.querySelectorAll<HTMLAnchorElement>('a[href^="/user_uploads/"]')) {
    const href = a.getAttribute('href') ?? '';
    if (!IMAGE.test(href) || shown.has(href) || a.closest('.message_inline_image') !== null) continue;
    shown.add(href);
    const box = document.createElement('div');
    box.className = 'message_inline_image';
    const link = document.createElement('a');
    link.href = href;
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
    link.title = a.textContent ?? '';
    const img = document.createElement('img');
    img.src = href;
    img.alt = a.textContent ?? '';
    img.loading = 'lazy';
    link.append(img);
    box.append(link);
    root.append(box);
  }
}

/** One message; re-rendered when its own signal or its props change, not with the list. */
export const MessageRow = memo(MessageRowView);

function MessageRowView({ id, showSender, selected, onSelect }: {
  id: number;
  showSender: boolean;
  selected: boolean;
  onSelect: (id: number) => void;
}) {
  const sig = messages.get(id);
  const [editing, setEditing] = useState(false);
  const [picking, setPicking] = useState(false);
  const [err, setErr] = useState('');
  // The action toolbar is built only for the row a mouse is over, the row holding the
  // focus and the selected row (a tap selects): most rows never need it, and a flood
  // of new rows builds a third of the elements it would.
  const [hovered, setHovered] = useState(false);
  const [focused, setFocused] = useState(false);
  const m = sig?.value;
  const myId = me.value;
  const decorate = useCallback((root: HTMLElement) => {
    const flags = sig?.peek().flags ?? [];
    for (const el of root.querySelectorAll<HTMLElement>('.user-mention')) {
      const uid = el.dataset.userId;
      if ((uid === String(myId) && flags.includes('mentioned')) || (uid === '*' && flags.includes('stream_wildcard_mentioned'))) {
        el.classList.add('user-mention-me');
      }
    }
    if (flags.includes('topic_wildcard_mentioned')) for (const el of root.querySelectorAll('.topic-mention')) el.classList.add('user-mention-me');
    for (const el of root.querySelectorAll('div.codehilite')) el.classList.add('zulip-code-block');
    addUploadPreviews(root);
    for (const el of root.querySelectorAll<HTMLElement>('span.emoji')) {
      const code = [...el.classList].find((c) => c.startsWith('emoji-'))?.slice(6);
      if (code !== undefined && /^[0-9a-f-]+$/.test(code)) el.textContent = emojiChar(code);
    }
    for (const t of root.querySelectorAll('time[datetime]')) {
      const d = new Date(t.getAttribute('datetime') ?? '');
      if (!Number.isNaN(d.getTime())) t.textContent = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }).format(d);
    }
  }, [sig, myId]);
  if (m === undefined) return null;
  const mine = m.sender_id === myId;
  const starred = m.flags.includes('starred');
  const unread = !m.flags.includes('read');
  const sender = users.value.get(m.sender_id);
  const senderName = sender?.full_name ?? m.sender_full_name;
  const permalink = m.type === 'stream'
    ? `${narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }, { operator: 'topic', operand: m.subject }], slugContext)}/near/${m.id}`
    : `${narrowToHash([{ operator: 'dm', operand: (typeof m.display_recipient === 'string' ? [] : m.display_recipient.map((r) => r.id)).join(',') }], slugContext)}/near/${m.id}`;
  const act = (p: Promise<unknown>) => p.catch((e: unknown) => setErr(e instanceof Error ? e.message : String(e)));
  const pick = (e: EmojiChoice) => {
    setPicking(false);
    void act(toggleReaction(m, { emoji_name: e.name, emoji_code: e.code, reaction_type: e.type }));
  };
  return (
    <article class={`message_row${showSender ? ' include-sender' : ''}${selected ? ' selected_message' : ''}${unread ? ' unread' : ''}${mine ? ' own' : ''}`}
      data-message-id={m.id} aria-label={`Message from ${senderName}`} tabIndex={selected ? 0 : -1}
      onClick={() => onSelect(m.id)}
      onPointerEnter={(e) => { if (e.pointerType === 'mouse') setHovered(true); }}
      onPointerLeave={() => setHovered(false)}
      onFocusIn={() => setFocused(true)}
      onFocusOut={(e) => { if (!(e.currentTarget as HTMLElement).contains(e.relatedTarget as Node | null)) setFocused(false); }}>
      <div class="message-gutter">
        {showSender
          ? <Avatar userId={m.sender_id} url={m.avatar_url} size={36} />
          : <span class="message-time-small" aria-hidden="true">{formatTime(m.timestamp)}</span>}
      </div>
      <div class="message-main">
        {showSender && (
          <div class="message-header">
            <button type="button" class="sender_name" aria-haspopup="dialog" title={`About ${senderName}`}
              onClick={(e) => { e.stopPropagation(); onSelect(m.id); openUserCard(m.sender_id, senderName); }}>{senderName}</button>
            <a class="message_time" href={permalink} title={formatFull(m.timestamp)}>{formatTime(m.timestamp)}</a>
          </div>
        )}
        {editing ? <EditBox m={m} onDone={() => setEditing(false)} /> : (
          <div class="message-body">
            <SafeHtml class="message_content rendered_markdown" html={m.rendered_content ?? ''} decorate={decorate} />
            {m.last_edit_timestamp !== undefined && (
              <button type="button" class="message_edit_notice" title={`Edited ${formatFull(m.last_edit_timestamp)}: show the edit history`}
                aria-haspopup="dialog" onClick={(e) => { e.stopPropagation(); openEditHistory(m.id); }}>(edited)</button>
            )}
            {m.last_edit_timestamp === undefined && m.last_moved_timestamp !== undefined && (
              <button type="button" class="message_edit_notice" title={`Moved ${formatFull(m.last_moved_timestamp)}: show the edit history`}
                aria-haspopup="dialog" onClick={(e) => { e.stopPropagation(); openEditHistory(m.id); }}>(moved)</button>
            )}
          </div>
        )}
        {m.reactions.length > 0 && <Reactions m={m} />}
        {err && <p class="error" role="alert">{err}</p>}
      </div>
      {(hovered || focused || selected || picking) && <div class="message-actions" role="toolbar" aria-label="Message actions">
        <button type="button" class="icon-button" title="Add emoji reaction" aria-label="Add emoji reaction" onClick={(e) => { e.stopPropagation(); setPicking(!picking); }}><Icon name="smile" /></button>
        <button type="button" class={`icon-button star${starred ? ' starred' : ''}`} aria-pressed={starred}
          title={starred ? 'Unstar this message' : 'Star this message'} aria-label={starred ? 'Unstar this message' : 'Star this message'}
          onClick={(e) => { e.stopPropagation(); void act(toggleStar(m)); }}><Icon name="star" filled={starred} /></button>
        <button type="button" class="icon-button" title="Quote and reply" aria-label="Quote and reply"
          onClick={(e) => { e.stopPropagation(); void act(quoteReply(m, permalink)); }}><Icon name="quote" /></button>
        <button type="button" class="icon-button" title="Mark as unread from here" aria-label="Mark as unread"
          onClick={(e) => { e.stopPropagation(); void act(post('messages/flags', { messages: [m.id], op: 'remove', flag: 'read' })); }}><Icon name="unread" /></button>
        {readReceiptsEnabled() && (
          <button type="button" class="icon-button" title="View read receipts" aria-label="View read receipts" aria-haspopup="dialog"
            onClick={(e) => { e.stopPropagation(); openReadReceipts(m.id); }}><Icon name="eye" /></button>
        )}
        {canEdit(m.sender_id, m.timestamp) && (
          <button type="button" class="icon-button" title="Edit message" aria-label="Edit message" onClick={(e) => { e.stopPropagation(); setEditing(true); }}><Icon name="pencil" /></button>
        )}
        {m.type === 'stream' && canMoveTopic(m.timestamp) && (
          <button type="button" class="icon-button" title="Move messages" aria-label="Move messages" onClick={(e) => { e.stopPropagation(); openMoveDialog(m); }}><Icon name="move" /></button>
        )}
        {canDelete(m.sender_id, m.timestamp) && (
          <button type="button" class="icon-button" title="Delete message" aria-label="Delete message"
            onClick={(e) => { e.stopPropagation(); if (confirm('Delete this message?')) void act(del(`messages/${m.id}`)); }}><Icon name="trash" /></button>
        )}
      </div>}
      {starred && <span class="star-indicator" role="img" aria-label="Starred"><Icon name="star" filled /></span>}
      {picking && <EmojiPicker onPick={pick} onClose={() => setPicking(false)} />}
    </article>
  );
}

async function quoteReply(m: Message, permalink: string): Promise<void> {
  const r = await get<{ message: Message }>(`messages/${m.id}`, { apply_markdown: false });
  const quoted = `@_**${m.sender_full_name}|${m.sender_id}** [said](${permalink}):\n\`\`\`quote\n${r.message.content}\n\`\`\`\n`;
  const target = m.type === 'stream'
    ? { type: 'stream' as const, streamId: m.stream_id, topic: m.subject }
    : { type: 'private' as const, to: typeof m.display_recipient === 'string' ? [] : m.display_recipient.map((x) => x.id).filter((id) => id !== me.value) };
  openCompose(target, `${composeContent.peek()}${quoted}`);
}

export function startEdit(id: number): void {
  const el = document.querySelector<HTMLButtonElement>(`[data-message-id="${id}"] button[aria-label="Edit message"]`);
  el?.click();
}
