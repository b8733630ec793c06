// A person's card, opened from a sender's name: who they are, their role, their local
// time, status and presence, and the ways to reach their messages.

import { signal } from '@preact/signals';
import { Emoji } from '../emoji';
import { narrowToHash } from '../narrow';
import { go } from '../route';
import { me, presenceStatus, slugContext, users, userStatus } from '../store';
import type { User } from '../types';
import { Avatar } from './Avatar';
import { Dialog } from './Dialog';

const shown = signal<{ id: number; name: string } | undefined>(undefined);

/** Opens the card of `id` (`name` stands in for a user the client does not know). */
export function openUserCard(id: number, name: string): void {
  shown.value = { id, name };
}

const ROLES: Record<number, string> = { 100: 'Organization owner', 200: 'Organization administrator', 300: 'Moderator', 400: 'Member', 600: 'Guest' };

/** The e-mail address to show: the real one when the server gave it to this user. */
export function visibleEmail(u: User): string | undefined {
  if (u.delivery_email) return u.delivery_email;
  // A hidden address comes as a stand-in, user<id>@<host>: not worth showing.
  return /^user\d+@/.test(u.email) ? undefined : u.email;
}

/** The time now where the user is, or undefined when their time zone is unknown. */
export function localTime(timezone: string | undefined, now = new Date()): string | undefined {
  if (!timezone) return undefined;
  try {
    return new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', timeZone: timezone }).format(now);
  } catch {
    return undefined;
  }
}

export function UserCard() {
  const s = shown.value;
  if (s === undefined) return null;
  const close = () => { shown.value = undefined; };
  const u = users.value.get(s.id);
  const name = u?.full_name ?? s.name;
  const status = userStatus.value.get(s.id);
  const presence = presenceStatus(s.id);
  const email = u === undefined ? undefined : visibleEmail(u);
  const time = localTime(u?.timezone);
  const role = u?.is_bot ? 'Bot' : u === undefined ? undefined : ROLES[u.role];
  const open = (hash: string) => { close(); go(hash); };
  return (
    <Dialog title={name} onClose={close}>
      <div class="user-card">
        <div class="user-card-top">
          <Avatar userId={s.id} size={72} />
          <dl class="user-card-facts">
            {s.id === me.value && <><dt>You</dt><dd>This is you</dd></>}
            {email !== undefined && <><dt>Email</dt><dd class="user-card-email">{email}</dd></>}
            {role !== undefined && <><dt>Role</dt><dd>{role}</dd></>}
            {u !== undefined && !u.is_active && <><dt>Account</dt><dd>Deactivated</dd></>}
            <dt>Presence</dt>
            <dd><span class={`user-circle user-circle-${presence}`} aria-hidden="true" /> {presence === 'active' ? 'Active now' : presence === 'idle' ? 'Idle' : 'Offline'}</dd>
            {time !== undefined && <><dt>Local time</dt><dd>{time}</dd></>}
            {(status?.status_text || status?.emoji_name) && (
              <>
                <dt>Status</dt>
                <dd>
                  {status.emoji_name && status.emoji_code && <Emoji type={status.reaction_type ?? 'unicode_emoji'} code={status.emoji_code} name={status.emoji_name} />}
                  {status.status_text && <span> {status.status_text}</span>}
                </dd>
              </>
            )}
          </dl>
        </div>
        <div class="row user-card-actions">
          {s.id !== me.value && (
            <button type="button" class="primary" onClick={() => open(narrowToHash([{ operator: 'dm', operand: String(s.id) }], slugContext))}>Send direct message</button>
          )}
          <button type="button" onClick={() => open(narrowToHash([{ operator: 'sender', operand: String(s.id) }], slugContext))}>View messages</button>
        </div>
      </div>
    </Dialog>
  );
}
