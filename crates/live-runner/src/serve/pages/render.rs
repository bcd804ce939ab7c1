//! The page templates (`templates/pages/*.html`, embedded at compile time) and their one
//! environment. Auto-escaping is on for every template (they are all `.html`): whatever a
//! template prints from its context is HTML-escaped, so no user text reaches a page raw.

use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, Value};

const TEMPLATES: [(&str, &str); 16] = [
    (
        "base.html",
        include_str!("../../../templates/pages/base.html"),
    ),
    (
        "login.html",
        include_str!("../../../templates/pages/login.html"),
    ),
    (
        "facts.html",
        include_str!("../../../templates/pages/facts.html"),
    ),
    (
        "memory.html",
        include_str!("../../../templates/pages/memory.html"),
    ),
    (
        "lessons.html",
        include_str!("../../../templates/pages/lessons.html"),
    ),
    (
        "not_found.html",
        include_str!("../../../templates/pages/not_found.html"),
    ),
    (
        "error.html",
        include_str!("../../../templates/pages/error.html"),
    ),
    (
        "deployments.html",
        include_str!("../../../templates/pages/deployments.html"),
    ),
    (
        "deployment.html",
        include_str!("../../../templates/pages/deployment.html"),
    ),
    (
        "ticks.html",
        include_str!("../../../templates/pages/ticks.html"),
    ),
    (
        "tick.html",
        include_str!("../../../templates/pages/tick.html"),
    ),
    (
        "alerts.html",
        include_str!("../../../templates/pages/alerts.html"),
    ),
    (
        "chat.html",
        include_str!("../../../templates/pages/chat.html"),
    ),
    (
        "conversation.html",
        include_str!("../../../templates/pages/conversation.html"),
    ),
    (
        "chat_actions.html",
        include_str!("../../../templates/pages/chat_actions.html"),
    ),
    (
        "backtests.html",
        include_str!("../../../templates/pages/backtests.html"),
    ),
];

/// The environment, or why a template did not parse (kept as text: the engine's error is not
/// `Clone`).
static ENV: LazyLock<Result<Environment<'static>, String>> = LazyLock::new(|| {
    let mut env = Environment::new();
    // Every page is HTML: escape everything printed, whatever a template's name says.
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::SemiStrict);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .map_err(|e| format!("template {name}: {e}"))?;
    }
    Ok(env)
});

/// Renders template `name` with `ctx`.
///
/// # Errors
/// The template engine's error (a template bug: a missing value, a syntax error); tested for
/// every page.
pub(crate) fn render(name: &str, ctx: Value) -> Result<String, minijinja::Error> {
    let env = ENV
        .as_ref()
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.clone()))?;
    env.get_template(name)?.render(ctx)
}

#[cfg(test)]
mod tests {
    use minijinja::context;

    use super::render;

    /// The Content-Security-Policy allows no inline script or style: no template may hold a
    /// `<script>`, a `<style>`, a `style=""` attribute or an `on…=` handler (they would not run
    /// or apply; put the rules in `pages.css`).
    #[test]
    fn no_template_holds_inline_script_or_style() {
        for (name, source) in super::TEMPLATES {
            let lower = source.to_ascii_lowercase();
            for banned in ["<script", "<style", " style=", "javascript:"] {
                assert!(!lower.contains(banned), "{name} holds `{banned}`");
            }
            let handler = lower.split_whitespace().find(|word| {
                word.strip_prefix("on").is_some_and(|rest| {
                    rest.split_once('=')
                        .is_some_and(|(event, _)| event.chars().all(|c| c.is_ascii_lowercase()))
                })
            });
            assert_eq!(handler, None, "{name} holds an event handler attribute");
        }
    }

    #[test]
    fn every_template_parses_and_escapes() {
        let html = render(
            "login.html",
            context! { title => "Log in", user => Option::<String>::None, error => "<script>x</script>" },
        )
        .unwrap();
        assert!(
            html.contains("&lt;script&gt;x&lt;&#x2f;script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>"));
        let html = render(
            "not_found.html",
            context! { title => "Not found", user => "u", what => "a & b" },
        )
        .unwrap();
        assert!(html.contains("a &amp; b"));
    }
}
