//! Reads a DOT text back: its quoted strings, unescaped, and what lies outside them. Shared
//! by the hostile-name property tests and the `renderings` fuzz target.

/// The quoted strings of `dot`, unescaped (`\"` and `\\`), and the text outside them;
/// `None` if a quote is left open.
pub fn dot_strings(dot: &str) -> Option<(Vec<String>, String)> {
    let (mut strings, mut outside) = (Vec::new(), String::new());
    let mut chars = dot.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            outside.push(c);
            continue;
        }
        let mut s = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => s.push(chars.next()?),
                c => s.push(c),
            }
        }
        strings.push(s);
    }
    Some((strings, outside))
}

/// Whether `c` may appear outside the quoted strings of lockscope's DOT: what lockscope
/// writes itself, never a name's content.
pub fn dot_syntax(c: char) -> bool {
    c.is_ascii_alphanumeric() || " \n{}[]=;,->_".contains(c)
}
