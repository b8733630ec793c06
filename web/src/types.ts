// The shapes of the Zulip API objects the client reads.

export interface Reaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

export interface DisplayRecipient {
  id: number;
  email: string;
  full_name: string;
}

export interface Message {
  id: number;
  sender_id: number;
  sender_full_name: string;
  sender_email: string;
  avatar_url?: string | null;
  timestamp: number;
  type: 'stream' | 'private';
  stream_id?: number;
  display_recipient: string | DisplayRecipient[];
  subject: string;
  content: string;
  rendered_content?: string;
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
  reactions: Reaction[];
  flags: string[];
}

export interface User {
  user_id: number;
  email: string;
  full_name: string;
  avatar_url?: string | null;
  is_bot: boolean;
  is_active: boolean;
  role: number;
  is_admin?: boolean;
  is_owner?: boolean;
  is_guest?: boolean;
  timezone?: string;
  delivery_email?: string | null;
  profile_data?: Record<string, { value: string; rendered_value?: string }>;
}

export interface Stream {
  stream_id: number;
  name: string;
  description: string;
  rendered_description: string;
  invite_only: boolean;
  is_web_public?: boolean;
  is_archived?: boolean;
  subscriber_count?: number;
  [key: string]: unknown;
}

export interface Subscription extends Stream {
  color: string;
  is_muted: boolean;
  pin_to_top: boolean;
  subscribers?: number[];
  desktop_notifications: boolean | null;
  audible_notifications: boolean | null;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
}

export interface Draft {
  id?: number;
  type: 'stream' | 'private' | '';
  to: number[];
  topic: string;
  content: string;
  timestamp?: number;
}

export interface RealmEmoji {
  id: string;
  name: string;
  source_url: string;
  deactivated: boolean;
  author_id?: number | null;
}

export interface Linkifier {
  id: number;
  pattern: string;
  url_template: string;
}

export interface UserStatus {
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
  away?: boolean;
}

export interface CustomProfileField {
  id: number;
  name: string;
  type: number;
  hint: string;
  order: number;
  field_data: string;
}

export interface UnreadMsgs {
  pms: { other_user_id?: number; sender_id?: number; unread_message_ids: number[] }[];
  streams: { stream_id: number; topic: string; unread_message_ids: number[] }[];
  huddles: { user_ids_string: string; unread_message_ids: number[] }[];
  mentions: number[];
  count: number;
  old_unreads_missing: boolean;
}

export type ServerEvent = { type: string; id: number; op?: string } & Record<string, unknown>;
