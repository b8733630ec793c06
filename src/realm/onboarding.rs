//! A first start with something to read, as Zulip's `zerver/lib/onboarding.py` shapes
//! it: the Welcome Bot (a system bot beside the Notification Bot,
//! `messages::moves::WELCOME_BOT`) writes a new realm's first conversations
//! (`send_initial_realm_messages`) and a direct message to every new human user
//! (`send_initial_direct_messages_to_user`), followed by the realm's
//! `welcome_message_custom_text` when it is set; `POST
//! /realm/test_welcome_bot_custom_message` sends an administrator that custom message
//! alone.
//!
//! Zulip's channel names, topic names, the order of the messages, their sender and the
//! reaction are kept; the sentences are hearth's own.
//!
//! | Change | Event |
//! |--------|-------|
//! | the welcome DM (`MessageChange::Sent`) | `message` to the new user, unread, as any DM |
//! | the test message (`MessageChange::Sent`) | `message` to the administrator, unread |
//!
//! A new realm's first messages are written with the realm (`hearth realm create`),
//! before anyone registers, so no event carries them.

use super::channels::{pick_color, render_description, Channel, ChannelSetting, NewSubscription};
use super::emoji::unicode_emoji_code;
use super::messages::flags;
use super::messages::moves::WELCOME_BOT_ID;
use super::messages::send::sent;
use super::messages::{Message, MessageChange, MessageId, Reaction, Recipient};
use super::settings::MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH;
use super::{Change, ChannelChange, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// Zulip's `Realm.ZULIP_DISCUSSION_CHANNEL_NAME`.
pub const ZULIP_DISCUSSION_CHANNEL_NAME: &str = "Zulip";
/// Zulip's `Realm.ZULIP_SANDBOX_CHANNEL_NAME`.
pub const ZULIP_SANDBOX_CHANNEL_NAME: &str = "sandbox";
/// Zulip's `Realm.DEFAULT_NOTIFICATION_STREAM_NAME`.
pub const DEFAULT_NOTIFICATION_CHANNEL_NAME: &str = "general";

/// The channels a new realm starts with, in the order Zulip's `do_create_realm` makes
/// them, with their descriptions. All three are default channels.
pub const INITIAL_CHANNELS: [(&str, &str); 3] = [
    (
        ZULIP_DISCUSSION_CHANNEL_NAME,
        "Ask and answer questions about how Zulip works.",
    ),
    (
        ZULIP_SANDBOX_CHANNEL_NAME,
        "A place to try things out. :test_tube:",
    ),
    (
        DEFAULT_NOTIFICATION_CHANNEL_NAME,
        "Conversations for the whole team.",
    ),
];

/// The kinds of first conversation (Zulip's `OnboardingMessageTypeEnum`), in the
/// order their messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnboardingTopic {
    MovingMessages,
    Experiments,
    StartConversation,
    Greetings,
    WelcomeToZulip,
}

impl OnboardingTopic {
    pub const ALL: [OnboardingTopic; 5] = [
        OnboardingTopic::MovingMessages,
        OnboardingTopic::Experiments,
        OnboardingTopic::StartConversation,
        OnboardingTopic::Greetings,
        OnboardingTopic::WelcomeToZulip,
    ];

    /// Zulip's topic name.
    pub fn topic(self) -> &'static str {
        match self {
            OnboardingTopic::MovingMessages => "moving messages",
            OnboardingTopic::Experiments => "experiments",
            OnboardingTopic::StartConversation => "start a conversation",
            OnboardingTopic::Greetings => "greetings",
            OnboardingTopic::WelcomeToZulip => "welcome to Zulip!",
        }
    }

    /// The channel Zulip's `send_initial_realm_messages` sends it to by default.
    pub fn default_channel(self) -> &'static str {
        match self {
            OnboardingTopic::MovingMessages | OnboardingTopic::WelcomeToZulip => {
                ZULIP_DISCUSSION_CHANNEL_NAME
            }
            OnboardingTopic::Experiments | OnboardingTopic::StartConversation => {
                ZULIP_SANDBOX_CHANNEL_NAME
            }
            OnboardingTopic::Greetings => DEFAULT_NOTIFICATION_CHANNEL_NAME,
        }
    }

    /// The messages of the topic (hearth's wording), `welcome_channel` being where
    /// the "welcome to Zulip!" topic is.
    fn contents(self, welcome_channel: &str) -> Vec<String> {
        let welcome = OnboardingTopic::WelcomeToZulip.topic();
        match self {
            OnboardingTopic::MovingMessages => vec![
                "Put something in the wrong place? You can [move messages]\
                 (/help/move-content-to-another-topic) to another topic, [rename a topic]\
                 (/help/rename-a-topic), split one in two, or send a whole topic [to another \
                 channel](/help/move-content-to-another-channel)."
                    .to_owned(),
                ":point_right: Give it a go: move this message to a new topic, then bring \
                 it back."
                    .to_owned(),
            ],
            OnboardingTopic::Experiments => vec![
                ":point_right: This topic is yours to play with: try out [formatting your \
                 messages](/help/format-your-message-using-markdown) here."
                    .to_owned(),
                format!(
                    "```spoiler A few things to try\n\n````python\n\nprint(\"a code \
                     block\")\n\n````\n\n- a\n- bulleted list\n\nA link to a conversation: \
                     #**{welcome_channel}>{welcome}**\n\n```"
                ),
            ],
            OnboardingTopic::StartConversation => vec![
                "New conversations start from a channel: choose one on the left and press \
                 the `+` beside its name."
                    .to_owned(),
                "Then give the conversation a topic: a few words that say what it is \
                 about, like the subject line of an email."
                    .to_owned(),
                ":point_right: Why not start one here, in this channel?".to_owned(),
            ],
            OnboardingTopic::Greetings => vec![
                "Say hello :wave: to everyone in this **greetings** topic.".to_owned(),
                ":point_right: Click this message to reply in the same conversation.".to_owned(),
            ],
            OnboardingTopic::WelcomeToZulip => vec![
                format!(
                    "Every conversation here has a topic, a short label for what it is \
                     about. This one is the \u{201c}{welcome}\u{201d} topic of the \
                     #**{welcome_channel}** channel: you can see both on the left and above."
                ),
                "Topics let you follow one conversation at a time, each message in its \
                 context, however many others are going on."
                    .to_owned(),
                ":point_right: When you are done here, your [Inbox](/#inbox) lists the \
                 other conversations with messages you have not read."
                    .to_owned(),
            ],
        }
    }
}

/// The text of the Welcome Bot's direct message to a new user (Zulip's
/// `send_initial_direct_message`: where the first conversations are when the realm
/// has some, a pointer to the getting-started guide, and for administrators one to
/// setting up an organization).
pub fn welcome_text(is_admin: bool, has_conversations: bool) -> String {
    let mut text = String::from("Hello, and welcome to Zulip!\u{1f44b} I'm the Welcome Bot.");
    if has_conversations {
        text.push_str(" A few conversations are already waiting for you in your [Inbox](/#inbox).");
    }
    text.push_str(
        "\n\nNew here? The [getting started guide](/help/getting-started-with-zulip) walks \
         you through the basics.",
    );
    if is_admin {
        text.push_str(
            " Bringing a team over? See [moving your organization to Zulip]\
             (/help/moving-to-zulip).",
        );
    }
    text
}

/// The messages the Welcome Bot understands (Zulip's `bot_commands`).
fn bot_commands(with_help: bool) -> String {
    let mut commands = vec![
        "apps",
        "profile",
        "theme",
        "channels",
        "topics",
        "message formatting",
        "keyboard shortcuts",
    ];
    if with_help {
        commands.push("help");
    }
    let listed: Vec<String> = commands.iter().map(|c| format!("`{c}`")).collect();
    format!("{}.", listed.join(", "))
}

/// The Welcome Bot's answer to a direct message (Zulip's
/// `select_welcome_bot_response`: the same words, matched on the whole lower-cased
/// message, and the same pages; the sentences are hearth's own).
pub fn welcome_bot_response(lower: &str) -> String {
    match lower {
        "app" | "apps" => "The [mobile and desktop apps](/apps/) are ready to \
                           [download](/apps/), and a browser works just as well."
            .to_owned(),
        "profile" => "Your [Profile settings](#settings/profile) hold your \
                      [profile picture](/help/change-your-profile-picture) and your \
                      [profile information](/help/edit-your-profile)."
            .to_owned(),
        "theme" => "[Preferences](#settings/preferences) is where you choose a \
                    [light or dark theme](/help/dark-theme), an \
                    [emoji set](/help/emoji-and-emoticons#change-your-emoji-set) and \
                    your [language](/help/change-your-language)."
            .to_owned(),
        "stream" | "streams" | "channel" | "channels" => {
            "[Channels](/help/introduction-to-channels) gather the conversations of a \
             team or a subject; [all of them](#channels/all) are a click away."
                .to_owned()
        }
        "topic" | "topics" => "Every conversation in a channel has a \
                               [topic](/help/introduction-to-topics), so you can read one \
                               conversation at a time. [Recent conversations](#recent) \
                               lists the lively ones."
            .to_owned(),
        "keyboard" | "shortcuts" | "keyboard shortcuts" => {
            "Press `?` at any time for the [keyboard shortcuts](#keyboard-shortcuts).".to_owned()
        }
        "formatting" | "message formatting" => "Messages take Markdown: **bold**, \
                                                *italic*, `code` and more; the \
                                                [cheat sheet](#message-formatting) has \
                                                the rest."
            .to_owned(),
        "help" | "?" => format!(
            "Messages I understand: {}\n\nThe [getting started \
             guide](/help/getting-started-with-zulip) and the [help center](/help/) have \
             the rest.",
            bot_commands(false)
        ),
        _ => format!(
            "Chat with me as much as you like. For help, send one of these: {}",
            bot_commands(true)
        ),
    }
}

/// The text of the Welcome Bot's message carrying the realm's custom text.
pub fn custom_welcome_text(custom: &str) -> String {
    format!("A note from your organization's administrators:\n\n{custom}")
}

/// `POST /realm/test_welcome_bot_custom_message`, parsed.
#[derive(Debug, Clone)]
pub struct TestWelcomeMessage {
    /// At most `MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH` characters (checked).
    pub welcome_message_custom_text: String,
}

impl TestWelcomeMessage {
    /// The parameter's length limit (`StringConstraints(max_length)`).
    pub fn check_length(text: String) -> ApiResult<String> {
        super::settings::check_length(
            "welcome_message_custom_text",
            text,
            MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
        )
    }
}

impl Realm {
    /// A message from the Welcome Bot (Zulip's `internal_send_*_message`), rendered now.
    fn welcome_bot_message(
        &self,
        id: MessageId,
        recipient: Recipient,
        content: String,
        now: i64,
    ) -> Message {
        let rendered = self.render_message(&content);
        let mentioned = self.mentioned_recipients(&recipient, &rendered.mentioned, WELCOME_BOT_ID);
        Message {
            mentioned,
            wildcard: rendered.wildcard,
            sender_read: true,
            ..Message::internal(id, WELCOME_BOT_ID, recipient, content, rendered.html, now)
        }
    }

    /// The conversation of `user` and the Welcome Bot.
    fn welcome_conversation(user: UserId) -> Recipient {
        let mut users = vec![user, WELCOME_BOT_ID];
        users.sort_unstable();
        Recipient::Direct { users }
    }

    /// The Welcome Bot's answer to `m` when `m` is a one-to-one direct message to it
    /// from someone else (Zulip's `send_welcome_bot_response`, from
    /// `do_send_messages`); it takes the id after `m`'s.
    pub(crate) fn welcome_bot_reply(&self, m: &Message, now: i64) -> Option<Change> {
        let Recipient::Direct { users } = &m.recipient else {
            return None;
        };
        if m.sender_id == WELCOME_BOT_ID || users.len() != 2 || !users.contains(&WELCOME_BOT_ID) {
            return None;
        }
        let text = welcome_bot_response(&m.content.to_lowercase());
        Some(sent(self.welcome_bot_message(
            m.id + 1,
            Self::welcome_conversation(m.sender_id),
            text,
            now,
        )))
    }

    /// The Welcome Bot's direct messages to a new human account `user_id` (Zulip's
    /// `send_initial_direct_messages_to_user`): the welcome, then the realm's custom
    /// text when it has one. Bots get none. Every path that creates a human account
    /// (`POST /users`, `hearth realm create`'s owner, a sign-up) puts these after the
    /// account's changes in the same decision; ids follow the realm's next one.
    pub fn welcome_changes(
        &self,
        user_id: UserId,
        is_admin: bool,
        is_bot: bool,
        cx: &Cx,
    ) -> Vec<Change> {
        if is_bot {
            return Vec::new();
        }
        let now = cx.now_secs();
        let mut id = self.messages.next_id;
        let mut changes = vec![sent(self.welcome_bot_message(
            id,
            Self::welcome_conversation(user_id),
            welcome_text(
                is_admin,
                self.messages.topics.values().any(|t| !t.is_empty()),
            ),
            now,
        ))];
        let custom = &self.properties.welcome_message_custom_text;
        if !custom.is_empty() {
            id += 1;
            changes.push(sent(self.welcome_bot_message(
                id,
                Self::welcome_conversation(user_id),
                custom_welcome_text(custom),
                now,
            )));
        }
        changes
    }

    /// `POST /realm/test_welcome_bot_custom_message`: administrators only
    /// (`require_realm_admin`), then "Message must not be empty"; the Welcome Bot sends
    /// `me` the custom message alone. Answers its id.
    pub fn decide_test_welcome_bot_custom_message(
        &self,
        me: &User,
        q: TestWelcomeMessage,
        cx: &mut Cx,
    ) -> ApiResult<Decided<MessageId>> {
        self.require_admin(me)?;
        if q.welcome_message_custom_text.is_empty() {
            return Err(ApiError::bad_request("Message must not be empty"));
        }
        let id = self.messages.next_id;
        let m = self.welcome_bot_message(
            id,
            Self::welcome_conversation(me.id),
            custom_welcome_text(&q.welcome_message_custom_text),
            cx.now_secs(),
        );
        Ok(Decided::new(vec![sent(m)], id))
    }

    /// A new realm's first conversations (Zulip's `send_initial_realm_messages`),
    /// each topic's messages in Zulip's order, sent to the channels `channel_of`
    /// names (`None`, or a channel the realm lacks: that topic is left out). The
    /// Welcome Bot reacts :wave: to the first greeting. Returns the changes and the
    /// id of the first message of each topic (Zulip stars those for new users).
    pub fn initial_message_changes(
        &self,
        channel_of: impl Fn(OnboardingTopic) -> Option<&'static str>,
        cx: &Cx,
    ) -> (Vec<Change>, Vec<MessageId>) {
        let now = cx.now_secs();
        let welcome_channel =
            channel_of(OnboardingTopic::WelcomeToZulip).unwrap_or(ZULIP_DISCUSSION_CHANNEL_NAME);
        let mut changes = Vec::new();
        let mut firsts = Vec::new();
        let mut reaction = None;
        let mut id = self.messages.next_id;
        for kind in OnboardingTopic::ALL {
            let Some(channel) = channel_of(kind).and_then(|n| self.channel_by_name(n)) else {
                continue;
            };
            for (i, content) in kind.contents(welcome_channel).into_iter().enumerate() {
                let recipient = Recipient::Channel {
                    channel_id: channel.id,
                    topic: kind.topic().to_owned(),
                };
                if i == 0 {
                    firsts.push(id);
                    if kind == OnboardingTopic::Greetings {
                        reaction = Some((id, recipient.clone()));
                    }
                }
                changes.push(sent(self.welcome_bot_message(id, recipient, content, now)));
                id += 1;
            }
        }
        if let Some((message_id, recipient)) = reaction {
            changes.push(Change::Message(MessageChange::ReactionAdded {
                message_id,
                recipient,
                reaction: Reaction {
                    user_id: WELCOME_BOT_ID,
                    emoji_name: "wave".to_owned(),
                    emoji_code: unicode_emoji_code("wave").unwrap_or("1f44b").to_owned(),
                    reaction_type: "unicode_emoji".to_owned(),
                },
            }));
        }
        (changes, firsts)
    }
}

/// What `hearth realm create` adds to a new realm's first changes (`first`: the realm
/// and its owner, `owner`): Zulip's three initial channels (default channels, the
/// owner subscribed), their first conversations with the first message of each topic
/// starred for the owner (Zulip's `OnboardingUserMessage` flags), and the owner's
/// welcome.
pub fn new_realm_onboarding(
    first: &[Change],
    owner: UserId,
    cx: &Cx,
) -> Result<Vec<Change>, String> {
    let mut realm = first
        .first()
        .and_then(Realm::from_first_change)
        .ok_or("a realm starts with RealmCreated")?;
    first.iter().for_each(|c| realm.apply(c));
    let now = cx.now_secs();
    let mut changes = Vec::new();
    let mut used = Vec::new();
    let mut subs = Vec::new();
    for (i, (name, description)) in INITIAL_CHANNELS.iter().enumerate() {
        let id = realm.next_channel_id + i as u64;
        let mut ch = Channel {
            id,
            name: (*name).to_owned(),
            rendered_description: render_description(description),
            description: (*description).to_owned(),
            invite_only: false,
            is_web_public: false,
            history_public_to_subscribers: true,
            is_archived: false,
            folder_id: None,
            date_created: now,
            creator_id: None,
            message_retention_days: None,
            topics_policy: Default::default(),
            settings: Default::default(),
            subs: imbl::OrdMap::new(),
        };
        ch.settings = ChannelSetting::ALL
            .into_iter()
            .map(|s| (s, s.default_for(&realm, None)))
            .collect();
        changes.push(Change::Channel(ChannelChange::ChannelCreated(Box::new(ch))));
        changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
            channel_id: id,
            is_default: true,
        }));
        let color = pick_color(&used);
        used.push(color.clone());
        subs.push(NewSubscription {
            channel_id: id,
            user_id: owner,
            color,
        });
    }
    changes.push(Change::Channel(ChannelChange::Subscribed { subs }));
    changes.iter().for_each(|c| realm.apply(c));
    let (messages, firsts) = realm.initial_message_changes(|t| Some(t.default_channel()), cx);
    messages.iter().for_each(|c| realm.apply(c));
    let mut tail = messages;
    tail.push(Change::Message(MessageChange::FlagsChanged {
        user_id: owner,
        flag: flags::STARRED,
        add: true,
        ids: firsts,
    }));
    let is_admin = realm.user(owner).is_some_and(|u| u.is_admin());
    tail.extend(realm.welcome_changes(owner, is_admin, false, cx));
    changes.extend(tail);
    Ok(changes)
}
