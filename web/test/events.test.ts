import { beforeEach, describe, expect, it } from 'vitest';
import { resetPacing } from '../src/frame';
import { applyEvents } from '../src/events';
import { loadRegister, me, messages, presence, storeMessage, subs, unread, users, userSettings, typing, recentDms } from '../src/store';
import type { Message, ServerEvent } from '../src/types';

let nextId = 1;
const ev = (e: Omit<ServerEvent, 'id'> & Record<string, unknown>) => ({ id: nextId++, ...e }) as ServerEvent;

function message(over: Partial<Message> = {}): Message {
  return {
    id: 100, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 1, type: 'stream', stream_id: 3,
    display_recipient: 'Verona', subject: 'Lunch', content: '<p>hi</p>', reactions: [], flags: [], ...over,
  };
}

beforeEach(() => {
  resetPacing();
  messages.clear();
  loadRegister({
    user_id: 10,
    realm_users: [
      { user_id: 10, email: 'h@x', full_name: 'Hamlet', is_bot: false, is_active: true, role: 400 },
      { user_id: 11, email: 'i@x', full_name: 'Iago', is_bot: false, is_active: true, role: 200 },
    ],
    subscriptions: [{ stream_id: 3, name: 'Verona', color: '#76ce90', is_muted: false, in_home_view: true, pin_to_top: false, description: '', rendered_description: '', invite_only: false }],
    user_settings: { enter_sends: false },
    unread_msgs: { streams: [], pms: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false },
    presences: {},
    server_timestamp: 1000,
  });
});

describe('event application', () => {
  it('message: stored, counted unread, recent DMs noted (in the next frame)', async () => {
    applyEvents([ev({ type: 'message', message: message(), flags: [] })]);
    expect(messages.get(100)?.value.rendered_content).toBe('<p>hi</p>');
    expect(unread.topicCount(3, 'Lunch')).toBe(1);
    applyEvents([ev({ type: 'message', message: message({ id: 101, type: 'private', stream_id: undefined, display_recipient: [{ id: 10, email: '', full_name: '' }, { id: 11, email: '', full_name: '' }] }), flags: ['read'] })]);
    await new Promise((r) => setTimeout(r, 0));
    expect(recentDms.value.get('11')).toBe(101);
    expect(unread.dmCount()).toBe(0);
  });
  it('update_message_flags: read add and remove', () => {
    applyEvents([ev({ type: 'message', message: message(), flags: [] })]);
    applyEvents([ev({ type: 'update_message_flags', op: 'add', flag: 'read', messages: [100], all: false })]);
    expect(unread.total()).toBe(0);
    expect(messages.get(100)?.value.flags).toContain('read');
    applyEvents([ev({ type: 'update_message_flags', op: 'remove', flag: 'read', messages: [100], all: false,
      message_details: { 100: { type: 'stream', stream_id: 3, topic: 'Lunch' } } })]);
    expect(unread.topicCount(3, 'Lunch')).toBe(1);
  });
  it('update_message: content edit and topic move', () => {
    applyEvents([ev({ type: 'message', message: message(), flags: [] })]);
    applyEvents([ev({ type: 'update_message', message_id: 100, message_ids: [100], rendered_content: '<p>edited</p>', content: 'edited', edit_timestamp: 5 })]);
    expect(messages.get(100)?.value.rendered_content).toBe('<p>edited</p>');
    expect(messages.get(100)?.value.last_edit_timestamp).toBe(5);
    applyEvents([ev({ type: 'update_message', message_id: 100, message_ids: [100], stream_id: 3, orig_subject: 'Lunch', subject: 'Dinner', propagate_mode: 'change_all', edit_timestamp: 6 })]);
    expect(messages.get(100)?.value.subject).toBe('Dinner');
    expect(unread.topicCount(3, 'Dinner')).toBe(1);
    expect(unread.topicCount(3, 'Lunch')).toBe(0);
  });
  it('delete_message removes the message and its unread', () => {
    applyEvents([ev({ type: 'message', message: message(), flags: [] })]);
    applyEvents([ev({ type: 'delete_message', message_ids: [100], message_type: 'stream' })]);
    expect(messages.has(100)).toBe(false);
    expect(unread.total()).toBe(0);
  });
  it('reaction add and remove', () => {
    storeMessage(message());
    const r = { emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: 10, message_id: 100 };
    applyEvents([ev({ type: 'reaction', op: 'add', ...r })]);
    expect(messages.get(100)?.value.reactions).toHaveLength(1);
    applyEvents([ev({ type: 'reaction', op: 'remove', ...r })]);
    expect(messages.get(100)?.value.reactions).toHaveLength(0);
  });
  it('typing start and stop', () => {
    applyEvents([ev({ type: 'typing', op: 'start', message_type: 'direct', sender: { user_id: 11 }, recipients: [{ user_id: 10 }, { user_id: 11 }] })]);
    expect(typing.value.get('dm:11')?.has(11)).toBe(true);
    applyEvents([ev({ type: 'typing', op: 'stop', message_type: 'direct', sender: { user_id: 11 }, recipients: [{ user_id: 10 }, { user_id: 11 }] })]);
    expect(typing.value.get('dm:11')?.has(11)).toBe(false);
  });
  it('subscription update, realm_user update, user_settings, presence', () => {
    applyEvents([
      ev({ type: 'subscription', op: 'update', stream_id: 3, property: 'in_home_view', value: false }),
      ev({ type: 'realm_user', op: 'update', person: { user_id: 11, full_name: 'Iago the Ensign' } }),
      ev({ type: 'user_settings', op: 'update', property: 'enter_sends', value: true }),
      ev({ type: 'presence', user_id: 11, server_timestamp: 2000, presence: { website: { status: 'active', timestamp: 1990 } } }),
    ]);
    expect(subs.value.get(3)?.is_muted).toBe(true);
    expect(users.value.get(11)?.full_name).toBe('Iago the Ensign');
    expect(userSettings.value.enter_sends).toBe(true);
    expect(presence.value.get(11)?.active).toBe(1990);
    expect(me.value).toBe(10);
  });
  it('subscription remove and stream delete', () => {
    applyEvents([ev({ type: 'subscription', op: 'remove', subscriptions: [{ stream_id: 3, name: 'Verona' }] })]);
    expect(subs.value.has(3)).toBe(false);
  });
});
