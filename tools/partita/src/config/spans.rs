//! Where things are in the file: field path to position, and back.
//!
//! serde reports a byte span but not which field it belongs to, and the
//! validator reports a field path but no position; a span-preserving parse
//! of the same text answers both questions.

use std::ops::Range;
use toml_edit::{Array, ArrayOfTables, ImDocument, InlineTable, Item, Table, Value};

pub struct SpanIndex {
    text: String,
    document: Option<ImDocument<String>>,
}

/// One step of a path: `partition`, `[1]`, `memory`, ...
#[derive(Clone, Copy)]
enum Step<'p> {
    Key(&'p str),
    Index(usize),
}

/// A TOML node seen only for its position and children.
#[derive(Clone)]
enum Node<'d> {
    Table(&'d Table),
    Inline(&'d InlineTable),
    Tables(&'d ArrayOfTables),
    Array(&'d Array),
    Leaf(Option<Range<usize>>),
}

struct Child<'d> {
    step: String,
    key_span: Option<Range<usize>>,
    node: Node<'d>,
}

impl<'d> Node<'d> {
    fn of_item(item: &'d Item) -> Self {
        match item {
            Item::Table(table) => Node::Table(table),
            Item::ArrayOfTables(tables) => Node::Tables(tables),
            Item::Value(value) => Node::of_value(value),
            Item::None => Node::Leaf(None),
        }
    }

    fn of_value(value: &'d Value) -> Self {
        match value {
            Value::InlineTable(table) => Node::Inline(table),
            Value::Array(array) => Node::Array(array),
            other => Node::Leaf(other.span()),
        }
    }

    fn span(&self) -> Option<Range<usize>> {
        match self {
            Node::Table(table) => table.span(),
            Node::Inline(table) => table.span(),
            Node::Tables(tables) => tables.span(),
            Node::Array(array) => array.span(),
            Node::Leaf(span) => span.clone(),
        }
    }

    fn key(&self, name: &str) -> Option<Child<'d>> {
        let (key, item) = match self {
            Node::Table(table) => table.get_key_value(name)?,
            Node::Inline(table) => table.get_key_value(name)?,
            _ => return None,
        };
        Some(Child { step: name.into(), key_span: key.span(), node: Node::of_item(item) })
    }

    fn index(&self, index: usize) -> Option<Child<'d>> {
        let node = match self {
            Node::Tables(tables) => Node::Table(tables.get(index)?),
            Node::Array(array) => Node::of_value(array.get(index)?),
            _ => return None,
        };
        Some(Child { step: format!("[{index}]"), key_span: None, node })
    }

    /// The `name` an entry gives itself, if it is written as a string.
    fn name(&self) -> Option<&'d str> {
        let value = match self {
            Node::Table(table) => table.get("name")?.as_value()?,
            Node::Inline(table) => table.get("name")?,
            _ => return None,
        };
        value.as_str()
    }

    fn children(&self) -> Vec<Child<'d>> {
        let keys: Vec<&str> = match self {
            Node::Table(table) => table.iter().map(|(key, _)| key).collect(),
            Node::Inline(table) => table.iter().map(|(key, _)| key).collect(),
            Node::Tables(tables) => return (0..tables.len()).filter_map(|i| self.index(i)).collect(),
            Node::Array(array) => return (0..array.len()).filter_map(|i| self.index(i)).collect(),
            Node::Leaf(_) => return Vec::new(),
        };
        keys.into_iter().filter_map(|key| self.key(key)).collect()
    }
}

fn parse_path(path: &str) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let mut pieces = part.split('[');
        if let Some(key) = pieces.next().filter(|key| !key.is_empty()) {
            steps.push(Step::Key(key));
        }
        let indices = pieces.filter_map(|piece| piece.trim_end_matches(']').parse().ok());
        steps.extend(indices.map(Step::Index));
    }
    steps
}

fn join(prefix: &str, step: &str) -> String {
    if prefix.is_empty() || step.starts_with('[') {
        format!("{prefix}{step}")
    } else {
        format!("{prefix}.{step}")
    }
}

fn contains(span: &Option<Range<usize>>, offset: usize) -> bool {
    span.as_ref().is_some_and(|span| span.contains(&offset) || (span.is_empty() && span.start == offset))
}

impl SpanIndex {
    pub fn new(text: &str) -> Self {
        Self { text: text.into(), document: ImDocument::parse(text.to_owned()).ok() }
    }

    fn root(&self) -> Option<Node<'_>> {
        self.document.as_ref().map(|document| Node::Table(document.as_table()))
    }

    /// Byte offset of `path.field`: the field's key if it is written, else
    /// the closest enclosing entry that is (a defaulted field has no place).
    pub fn locate(&self, path: &str, field: &str) -> Option<usize> {
        let mut node = self.root()?;
        let mut best = None;
        for step in parse_path(path).into_iter().chain((!field.is_empty()).then_some(Step::Key(field))) {
            let child = match step {
                Step::Key(key) => node.key(key),
                Step::Index(index) => node.index(index),
            };
            let Some(child) = child else { break };
            best = child.key_span.clone().or_else(|| child.node.span()).map(|span| span.start).or(best);
            node = child.node;
        }
        best
    }

    /// `path` with every entry that has a name called by it, as a reader
    /// finds it in the file: `partition[1].device[0]` becomes
    /// `partition["linux"].device["rtc"]`; entries without one keep their
    /// index.
    pub fn named(&self, path: &str) -> String {
        let mut node = self.root();
        let mut named = String::new();
        for step in parse_path(path) {
            let child = node.as_ref().and_then(|node| match step {
                Step::Key(key) => node.key(key),
                Step::Index(index) => node.index(index),
            });
            let shown = match (step, child.as_ref().and_then(|child| child.node.name())) {
                (Step::Key(key), _) => key.to_owned(),
                (Step::Index(_), Some(name)) => format!("[\"{name}\"]"),
                (Step::Index(index), None) => format!("[{index}]"),
            };
            named = join(&named, &shown);
            node = child.map(|child| child.node);
        }
        named
    }

    /// The dotted path of the deepest entry at `offset`, e.g. `partition[0].memory[1].size`.
    pub fn path_at(&self, offset: usize) -> String {
        self.root().and_then(|root| find(root, offset, "")).unwrap_or_default()
    }

    /// The byte range of the `key = value` entry whose key starts at
    /// `offset`.
    pub fn entry_at(&self, offset: usize) -> Option<Range<usize>> {
        self.root().and_then(|root| entry(root, offset))
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut end = offset.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &self.text[..end];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        (line, before[line_start..].chars().count() + 1)
    }
}

/// The `key = value` entry whose key starts at `offset`, from the key to
/// the value's end; none for a table of its own (`[section]`), whose
/// body lies elsewhere.
fn entry(node: Node<'_>, offset: usize) -> Option<Range<usize>> {
    for child in node.children() {
        let value = match child.node {
            Node::Table(_) | Node::Tables(_) => None,
            ref leaf => leaf.span(),
        };
        if let (Some(key), Some(value)) = (&child.key_span, value) {
            if key.start == offset {
                return Some(key.start..value.end);
            }
        }
        if let Some(found) = entry(child.node, offset) {
            return Some(found);
        }
    }
    None
}

/// Depth first, because a table's span covers its header and body but the
/// subtables declared after it (`[[partition.memory]]`) lie elsewhere.
fn find(node: Node<'_>, offset: usize, prefix: &str) -> Option<String> {
    for child in node.children() {
        let path = join(prefix, &child.step);
        if let Some(found) = find(child.node, offset, &path) {
            return Some(found);
        }
        if contains(&child.key_span, offset) {
            return Some(path);
        }
    }
    contains(&node.span(), offset).then(|| prefix.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[platform]\ncpus = 4\nram = { base = 1, size = \"1G\" }\n\n\
                        [[partition]]\nname = \"a\"\ncpus = [1, 2]\n[[partition.memory]]\nbase = 5\n";

    #[test]
    fn path_to_position() {
        let index = SpanIndex::new(TEXT);
        let at = |path, field| index.locate(path, field).map(|offset| index.line_column(offset));
        assert_eq!(at("platform", "cpus"), Some((2, 1)));
        assert_eq!(at("platform.ram", "size"), Some((3, 19)));
        assert_eq!(at("partition[0]", "cpus"), Some((7, 1)));
        assert_eq!(at("partition[0].memory[0]", "base"), Some((9, 1)));
        // Defaulted fields point at the table that would hold them.
        assert_eq!(at("partition[0].memory[0]", "phys"), Some((8, 1)));
        assert_eq!(at("hypervisor", "quantum_us"), None);
    }

    #[test]
    fn entries_by_name() {
        let index = SpanIndex::new(TEXT);
        assert_eq!(index.named("partition[0].memory[0].base"), "partition[\"a\"].memory[0].base");
        assert_eq!(index.named("partition[0].cpus[1]"), "partition[\"a\"].cpus[1]");
        assert_eq!(index.named("partition[3].memory[0]"), "partition[3].memory[0]", "no such entry");
        assert_eq!(index.named("platform.ram"), "platform.ram");
    }

    #[test]
    fn position_to_path() {
        let index = SpanIndex::new(TEXT);
        let path_at = |needle: &str| index.path_at(TEXT.find(needle).unwrap());
        assert_eq!(path_at("\"1G\""), "platform.ram.size");
        assert_eq!(path_at("2]"), "partition[0].cpus[1]");
        assert_eq!(path_at("[[partition]]"), "partition[0]");
        assert_eq!(path_at("base = 5"), "partition[0].memory[0].base");
    }
}
