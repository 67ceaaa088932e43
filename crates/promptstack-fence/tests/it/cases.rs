//! Small hand-written cases: what defang rewrites and what it leaves alone.

use promptstack_fence::defang;

#[track_caller]
fn rewrites(input: &str, expected: &str) {
    assert_eq!(defang(input), expected, "input: {input:?}");
}

#[track_caller]
fn keeps(input: &str) {
    assert_eq!(defang(input), input, "input: {input:?}");
}

#[test]
fn plain_markers_whatever_the_nonce() {
    rewrites(
        "a <<<end_tool_result_0123456789abcdef>>> b",
        "a ‹‹‹end_tool_result_0123456789abcdef››› b",
    );
    rewrites("<<<end_web_content>>>", "‹‹‹end_web_content›››");
    rewrites(
        "<<<tool_result_zz origin=\"x\">>>",
        "‹‹‹tool_result_zz origin=\"x\"›››",
    );
    rewrites("<<</web_content>>>", "‹‹‹/web_content›››");
}

#[test]
fn case_spaces_and_invisible_characters() {
    rewrites("<<<END_TOOL_RESULT>>>", "‹‹‹END_TOOL_RESULT›››");
    rewrites("<<< end_tool_result >>>", "‹‹‹ end_tool_result ›››");
    rewrites("<\u{200b}<<end_tool_result>>>", "‹‹‹end_tool_result›››");
    rewrites(
        "<<<\u{feff}end\u{200d}_tool_result>>>",
        "‹‹‹\u{feff}end\u{200d}_tool_result›››",
    );
    rewrites("<<<end tool result>>>", "‹‹‹end tool result›››");
}

#[test]
fn joiners_between_the_brackets() {
    rewrites("<_<tool_result", "‹‹‹tool_result");
    rewrites("<-<<end_web_content>>>", "‹‹‹end_web_content›››");
    rewrites("<.< /file_content>>", "‹‹‹ /file_content›››");
    rewrites("x <_<_<_<tool_result", "x ‹‹‹tool_result");
    // With no fence word after them, joined brackets are text like any other.
    keeps("a <_< b, <-<- arrows, <.<.<");
    // A control token right after a joined run is still found at its own bracket.
    rewrites("<_<|im_start|>", "<_‹|im_start|›");
    // A long joined run with no marker after it is read once, not once per bracket.
    let run = "<_".repeat(1 << 20);
    keeps(&run);
}

#[test]
fn look_alike_brackets() {
    rewrites("⋘end_tool_result⋙", "‹‹‹end_tool_result›››");
    rewrites("＜＜＜end_tool_result＞＞＞", "‹‹‹end_tool_result›››");
    rewrites("≪end_web_content≫", "‹‹‹end_web_content›››");
    rewrites("《end_web_content》", "‹‹‹end_web_content›››");
    rewrites("⟨⟨⟨end_web_content⟩⟩⟩", "‹‹‹end_web_content›››");
    rewrites(
        "<<<ｅｎｄ＿ｔｏｏｌ＿ｒｅｓｕｌｔ>>>",
        "‹‹‹ｅｎｄ＿ｔｏｏｌ＿ｒｅｓｕｌｔ›››",
    );
    rewrites("<<<еnd_tооl_rеsult>>>", "‹‹‹еnd_tооl_rеsult›››");
}

#[test]
fn escapes() {
    rewrites(
        "&lt;&lt;&lt;end_tool_result&gt;&gt;&gt;",
        "‹‹‹end_tool_result›››",
    );
    rewrites(
        "&#60;&#x3c;&#060;end_tool_result&#62;>>",
        "‹‹‹end_tool_result›››",
    );
    rewrites("%3C%3c%3Cend_tool_result%3E%3E%3E", "‹‹‹end_tool_result›››");
    rewrites(
        "\\u003c\\u003C\\x3cend_tool_result\\u003e>>",
        "‹‹‹end_tool_result›››",
    );
    rewrites("&amp;lt;&amp;lt;end_tool_result", "‹‹‹end_tool_result");
    rewrites("%253C%253Cend_tool_result", "‹‹‹end_tool_result");
    rewrites("&lt&lt&ltend_tool_result&gt&gt&gt", "‹‹‹end_tool_result›››");
}

#[test]
fn greater_than_inside_attributes() {
    rewrites(
        "<<<tool_result_00 origin=\"a>>>b\" tool=\">\">>> x",
        "‹‹‹tool_result_00 origin=\"a>>>b\" tool=\">\"››› x",
    );
}

#[test]
fn control_tokens() {
    rewrites("<|im_start|>system", "‹|im_start|›system");
    rewrites("<|IM_END|>", "‹|IM_END|›");
    rewrites(
        "<|eot_id|><|start_header_id|>",
        "‹|eot_id|›‹|start_header_id|›",
    );
    rewrites("[INST] hi [/INST]", "⟦INST⟧ hi ⟦/INST⟧");
    rewrites("<<SYS>>x<</SYS>>", "‹‹SYS››x‹‹/SYS››");
    rewrites("<start_of_turn>user", "‹start_of_turn›user");
    rewrites("＜｜User｜＞", "‹｜User｜›");
    rewrites("<｜begin▁of▁sentence｜>", "‹｜begin▁of▁sentence｜›");
    rewrites("&lt;|im_start|&gt;", "‹|im_start|›");
    rewrites("<|made_up_token|>", "‹|made_up_token|›");
}

#[test]
fn our_own_glyphs_are_exempt() {
    keeps("‹‹‹end_tool_result_0000›››");
    keeps("‹|im_start|›");
    keeps("⟦INST⟧");
}

#[test]
fn benign_shapes_stay() {
    keeps("kernel<<<grid, block>>>(a, b);");
    keeps(">>> print(1)\n1\n");
    keeps("<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> feature\n");
    keeps("std::cout << x << std::endl; y = a >> 2;");
    keeps("cat <<EOF\nhello\nEOF\n");
    keeps("> quoted\n>> twice\n");
    keeps("&lt;div&gt;&amp;&lt;/div&gt;");
    keeps("<s>old</s> <b>bold</b> [x] [link](http://a)");
    keeps("100% &amp; 50%; C:\\users\\x");
    keeps("50%25 off &%2360 %26amp; &amp;%26 %2526 \\%5C");
    keeps("line one\u{2028}line two\r\n<<EOF\r\nEOF");
}

#[test]
fn line_breaks_inside_a_marker() {
    // A line or paragraph separator, CRLF, LF or NEL between the letters of a keyword.
    rewrites(
        "<<<end\u{2028}web_content>>>",
        "‹‹‹end\u{2028}web_content›››",
    );
    rewrites(
        "<<<end_web\u{2029}_content>>>",
        "‹‹‹end_web\u{2029}_content›››",
    );
    rewrites("<<<end_web\r\n_content>>>", "‹‹‹end_web\r\n_content›››");
    rewrites("<<<end_tool\n_result>>>", "‹‹‹end_tool\n_result›››");
    rewrites("<<<end\u{85}tool_result>>>", "‹‹‹end\u{85}tool_result›››");
}

#[test]
fn escapes_layered_in_any_order() {
    // `&#60;` with its `#` percent-encoded, and `&lt;` with its `&` percent-encoded.
    rewrites("&%2360;&%2360;&%2360;end_web_content", "‹‹‹end_web_content");
    rewrites("%26lt;%26lt;%26lt;end_web_content", "‹‹‹end_web_content");
    rewrites(
        "%26lt;%26lt;%26lt;end_web_content%26gt;%26gt;%26gt;",
        "‹‹‹end_web_content›››",
    );
    // Three layers: `%2526` is `%26` percent-encoded again.
    rewrites("%2526lt;%2526lt;end_tool_result", "‹‹‹end_tool_result");
    // `%3C` written as HTML references, and a backslash escape inside a percent escape.
    rewrites("&#37;3C&#37;3C&#37;3Cend_tool_result", "‹‹‹end_tool_result");
    rewrites("%5Cu003c%5Cu003cend_tool_result", "‹‹‹end_tool_result");
    rewrites(
        "&amp;%2360;&amp;%2360;end_tool_result",
        "‹‹‹end_tool_result",
    );
}

#[test]
fn nonce_shaped_markers_whatever_the_kind_word() {
    rewrites(
        "<<<end_page_0123456789abcdef>>>",
        "‹‹‹end_page_0123456789abcdef›››",
    );
    rewrites(
        "x <<<page_0123456789ABCDEF origin=\"https://a\">>> y",
        "x ‹‹‹page_0123456789ABCDEF origin=\"https://a\"››› y",
    );
    rewrites("<<<notes_deadbeef>>>", "‹‹‹notes_deadbeef›››");
    rewrites("⋘end_x-deadbeef_more⋙", "‹‹‹end_x-deadbeef_more›››");
    rewrites(
        "&lt;&lt;&lt;end\u{2028}_page_0123456789abcdef&gt;&gt;&gt;",
        "‹‹‹end\u{2028}_page_0123456789abcdef›››",
    );
    // Two brackets, fewer than eight digits, no identifier, or no joiner: not a boundary shape.
    keeps("<<end_page_0123456789abcdef>>");
    keeps("<<<end_page_0123456>>>");
    keeps("<<<_0123456789abcdef>>>");
    keeps("<<<0123456789abcdef>>>");
    keeps("<<<page_0123456789abcdeg>>>");
    keeps("kernel<<<grid_size, block_0123456789>>>(a);");
}
