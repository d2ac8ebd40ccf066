//! Splitting a command line into pipeline stages, words and redirections.
//!
//! Quoting follows the POSIX shell for the cases a user needs: `'...'`
//! keeps everything literally, `"..."` keeps everything but `\"` and `\\`,
//! a backslash outside quotes escapes the next character. Unquoted `|`, `>`
//! and `>>` are operators even when attached to a word (`echo 1>file`
//! writes `1` to `file`: there are no file-descriptor numbers here).

use alloc::string::String;
use alloc::vec::Vec;

/// One command of a pipeline.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stage {
    pub argv: Vec<String>,
    /// `> FILE` (false) or `>> FILE` (true); the last one wins, as in sh.
    pub redirect: Option<(String, bool)>,
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Pipe,
    Redirect { append: bool },
}

/// Parses a line. Err carries the message the shell prints after `sh: `.
pub fn parse_line(line: &str) -> Result<Vec<Stage>, String> {
    let tokens = tokenize(line)?;
    let mut stages = Vec::new();
    let mut stage = Stage::default();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Token::Word(w) => stage.argv.push(w),
            Token::Pipe => {
                if stage.argv.is_empty() {
                    return Err(String::from("syntax error: unexpected \"|\""));
                }
                stages.push(core::mem::take(&mut stage));
            }
            Token::Redirect { append } => match iter.next() {
                Some(Token::Word(file)) => stage.redirect = Some((file, append)),
                Some(Token::Pipe) => return Err(String::from("syntax error: unexpected \"|\"")),
                Some(Token::Redirect { .. }) => {
                    return Err(String::from("syntax error: unexpected redirection"))
                }
                None => return Err(String::from("syntax error: unexpected newline")),
            },
        }
    }
    if stage.argv.is_empty() {
        if !stages.is_empty() {
            return Err(String::from("syntax error: unexpected end of file"));
        }
        if stage.redirect.is_some() {
            // `> file` alone truncates/creates the file, as in sh.
            stages.push(stage);
        }
        return Ok(stages);
    }
    stages.push(stage);
    Ok(stages)
}

fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    tokens.push(Token::Word(core::mem::take(&mut word)));
                    in_word = false;
                }
            }
            '|' | '>' => {
                if in_word {
                    tokens.push(Token::Word(core::mem::take(&mut word)));
                    in_word = false;
                }
                if c == '|' {
                    tokens.push(Token::Pipe);
                } else if chars.peek() == Some(&'>') {
                    chars.next();
                    tokens.push(Token::Redirect { append: true });
                } else {
                    tokens.push(Token::Redirect { append: false });
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => {
                            return Err(String::from("syntax error: unterminated quoted string"))
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"') | Some('\\')) => {
                            word.push(chars.next().unwrap_or('\\'))
                        }
                        Some(c) => word.push(c),
                        None => {
                            return Err(String::from("syntax error: unterminated quoted string"))
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        tokens.push(Token::Word(word));
    }
    Ok(tokens)
}

/// Parses `SECONDS[.FRACTION]` into nanoseconds.
pub fn parse_seconds(s: &str) -> Option<u64> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ns: u64 = 0;
    for (i, b) in frac.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}
