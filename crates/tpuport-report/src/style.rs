//! Optional colour. Renderers take a [`Paint`]; the binary decides whether it is on (`--color`,
//! `NO_COLOR`, whether stdout is a terminal), so a renderer never looks at the environment and
//! its plain output is the same whatever the terminal. Every report reads fully without colour:
//! styles only emphasise what the words already say.

/// A text style, drawn with ANSI SGR codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Section titles, table headers.
    Bold,
    /// Secondary detail.
    Dim,
    /// Errors.
    Red,
    /// Warnings.
    Yellow,
    /// Success.
    Green,
    /// Informational.
    Cyan,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Red => "31",
            Style::Yellow => "33",
            Style::Green => "32",
            Style::Cyan => "36",
        }
    }
}

/// Whether styles are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paint {
    enabled: bool,
}

impl Paint {
    /// No colour: the text as is.
    pub const PLAIN: Paint = Paint { enabled: false };

    /// Colour when `enabled`.
    #[must_use]
    pub fn new(enabled: bool) -> Paint {
        Paint { enabled }
    }

    /// True when styles are drawn.
    #[must_use]
    pub fn enabled(self) -> bool {
        self.enabled
    }

    /// `text` in `style` (unchanged when colour is off or the text is empty).
    #[must_use]
    pub fn paint(self, text: &str, style: Style) -> String {
        if self.enabled && !text.is_empty() {
            format!("\u{1b}[{}m{text}\u{1b}[0m", style.sgr())
        } else {
            text.to_owned()
        }
    }
}

/// `s` without ANSI escape sequences (CSI `ESC [ … letter`), e.g. to measure or compare it.
#[must_use]
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paints_only_when_enabled() {
        assert_eq!(Paint::PLAIN.paint("x", Style::Red), "x");
        assert_eq!(Paint::new(true).paint("x", Style::Red), "\u{1b}[31mx\u{1b}[0m");
        assert_eq!(Paint::new(true).paint("", Style::Red), "");
        assert_eq!(strip_ansi("a\u{1b}[1;31mb\u{1b}[0mc"), "abc");
        assert_eq!(strip_ansi("plain … text"), "plain … text");
    }
}
