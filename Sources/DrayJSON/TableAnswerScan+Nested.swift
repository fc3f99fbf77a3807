internal import DrayModel

// MARK: Nested values inside a row, kept as JSON text

extension TableAnswerScan {
  /// A nested array or object of a row as compact JSON text: key order kept, numbers as
  /// written, strings written by `JSONValue.writeString`.
  struct NestedText {
    /// The text so far.
    private(set) var text: [UInt8] = []
    /// Per open container: whether the next item needs a comma before it.
    private var needsComma: [Bool] = []

    /// Starts a new text with the array or object that opens it.
    mutating func begin(isArray: Bool) {
      text.removeAll(keepingCapacity: true)
      needsComma.removeAll(keepingCapacity: true)
      text.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
      needsComma.append(false)
    }

    private mutating func separator() {
      let last = needsComma.count - 1
      if needsComma[last] { text.append(UInt8(ascii: ",")) }
      needsComma[last] = true
    }

    mutating func open(isArray: Bool) {
      separator()
      text.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
      needsComma.append(false)
    }

    mutating func close(isArray: Bool) {
      text.append(isArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
      needsComma.removeLast()
    }

    mutating func key(_ key: UnsafeBufferPointer<UInt8>) {
      separator()
      append(string: key)
      text.append(UInt8(ascii: ":"))
      needsComma[needsComma.count - 1] = false
    }

    mutating func scalar(_ literal: StaticString) {
      separator()
      text.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func number(_ number: UnsafeBufferPointer<UInt8>) {
      separator()
      text.append(contentsOf: number)
    }

    mutating func string(_ string: UnsafeBufferPointer<UInt8>) {
      separator()
      append(string: string)
    }

    private mutating func append(string: UnsafeBufferPointer<UInt8>) {
      var out = ""
      JSONValue.writeString(String(decoding: string, as: UTF8.self), to: &out)
      text.append(contentsOf: out.utf8)
    }
  }

  mutating func startNested(isArray: Bool) {
    nested.begin(isArray: isArray)
    place = .nested
    depth = 1
  }

  /// An array or object inside the nested value.
  mutating func openNested(isArray: Bool) {
    nested.open(isArray: isArray)
    depth += 1
  }

  /// Closes the innermost container of the nested value; the outermost hands the text to the
  /// row sink as the row's value.
  mutating func endNested(isArray: Bool) throws {
    nested.close(isArray: isArray)
    depth -= 1
    guard depth == 0 else { return }
    place = .row
    // The row sink borrows the text for the call only; it is not touched meanwhile.
    let text = nested.text
    try text.withUnsafeBufferPointer { try value(.nested($0)) }
  }
}
