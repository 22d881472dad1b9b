//! The notification-settings family: stored settings documents, patches, the effective
//! (resolved) settings and the notification catalog.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::DateTime;

closed_model! {
    /// `NotificationSettingsDocument` (closed): the stored notification settings of an entity.
    pub struct NotificationSettingsDocument {
        pub id: Option<String>,
        pub partition_key: Option<String>,
        pub r#type: Option<String>,
        pub entity_id: Uuid,
        pub company_id: Option<Uuid>,
        /// Settings per category name.
        pub categories: Option<BTreeMap<String, CategorySettings>>,
        pub updated_by: Option<Uuid>,
        pub updated_at: DateTime,
        /// The document store's concurrency token.
        #[serde(rename = "_etag")]
        pub etag: Option<String>,
    }
}

closed_model! {
    /// `CategorySettings` (closed): one category's settings for clients and for users.
    pub struct CategorySettings {
        pub client: RecipientBranch,
        pub user: RecipientBranch,
    }
}

closed_model! {
    /// `RecipientBranch` (closed): the settings of one recipient kind within a category.
    pub struct RecipientBranch {
        pub enabled: Option<bool>,
        pub items: Option<BTreeMap<String, bool>>,
        pub milestones: Option<BTreeMap<String, bool>>,
        pub known_templates: Option<Vec<String>>,
    }
}

closed_model! {
    /// `NotificationSettingsPatchOperation` (closed): sets one boolean at a path.
    pub struct NotificationSettingsPatchOperation {
        pub path: Option<String>,
        pub value: Option<bool>,
    }
}

closed_model! {
    /// `EffectiveNotificationSettings` (closed): the settings that apply to an entity once
    /// defaults and overrides are resolved.
    pub struct EffectiveNotificationSettings {
        pub entity_type: Option<String>,
        pub entity_id: Uuid,
        pub categories: Option<BTreeMap<String, EffectiveCategory>>,
        pub r#override: NotificationSettingsDocument,
        pub permissions: EffectiveNotificationPermissions,
    }
}

closed_model! {
    /// `EffectiveNotificationPermissions` (closed).
    pub struct EffectiveNotificationPermissions {
        pub can_edit: bool,
    }
}

closed_model! {
    /// `EffectiveCategory` (closed): one category's effective settings.
    pub struct EffectiveCategory {
        pub client: EffectiveBranch,
        pub user: EffectiveBranch,
    }
}

closed_model! {
    /// `EffectiveBranch` (closed): one recipient kind's effective settings.
    pub struct EffectiveBranch {
        pub enabled: EffectiveValue,
        pub milestones: Option<BTreeMap<String, EffectiveValue>>,
        pub items: Option<BTreeMap<String, EffectiveValue>>,
    }
}

closed_model! {
    /// `EffectiveValue` (closed): a resolved switch and where its value came from.
    pub struct EffectiveValue {
        pub enabled: bool,
        pub source: Option<String>,
        pub reason: Option<String>,
    }
}

closed_model! {
    /// `NotificationCatalogResponse` (closed): every notification that can be configured.
    pub struct NotificationCatalogResponse {
        pub entries: Option<Vec<NotificationCatalogEntry>>,
        pub milestones: NotificationCatalogMilestones,
    }
}

closed_model! {
    /// `NotificationCatalogEntry` (closed): one configurable notification.
    pub struct NotificationCatalogEntry {
        pub template_key: Option<String>,
        pub category: Option<String>,
        pub recipient_types: Option<Vec<String>>,
        /// Set by the server.
        #[schemars(extend("readOnly" = true))]
        pub item_key: Option<String>,
        pub display_name: Option<String>,
        pub description: Option<String>,
        /// Set by the server.
        #[schemars(extend("readOnly" = true))]
        pub agent_delivery: Option<String>,
        pub milestone: Option<String>,
        pub default_enabled: bool,
    }
}

closed_model! {
    /// `NotificationCatalogMilestones` (closed): the milestones per recipient kind.
    pub struct NotificationCatalogMilestones {
        pub client: Option<Vec<MilestoneSummary>>,
        pub user: Option<Vec<MilestoneSummary>>,
    }
}

closed_model! {
    /// `MilestoneSummary` (closed).
    pub struct MilestoneSummary {
        pub code: Option<String>,
        pub name: Option<String>,
        pub order: i32,
        pub item_keys: Option<Vec<String>>,
    }
}
