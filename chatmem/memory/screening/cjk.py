"""Chinese, Japanese and Korean phrasings of an injection: regular expressions for `poison`.

These languages write no spaces between words, so the phrasebook's phrases
(matched word by word on the folded `words` view) cannot express them, and
transliteration would blur them. They are regular expressions on the text as
typed (NFKC only), one list per flag code.
"""

from __future__ import annotations

PATTERNS = {
    "override": [
        r"(忽略|无视|無視|忘记|忘記|忘掉|不要理会).{0,12}(指令|指示|规则|規則|说明|命令|设定)",
        r"(指令|指示|规则|規則|ルール|命令).{0,12}(无视|無視|忽略|忘れ)",
        r"(以前|之前|前面|上面|これまで)の?.{0,6}(指示|指令|命令).{0,8}(無視|忘れ)",
        r"이전.{0,12}(지시|명령|규칙).{0,8}무시",
        r"(没有|沒有|不受)(任何)?(限制|约束|審查|审查)",
        r"不加审查",
    ],
    "role_play": [
        r"(从现在起|從現在起|从现在开始)你",
        r"你现在是",
        r"(开发者|開發者)模式",
        r"(開発者|デベロッパー)モード",
        r"今からあなたは",
    ],
    "exfiltration": [
        r"(系统|系統)(提示|消息|指令)",
        r"システム(プロンプト|メッセージ)",
        r"(显示|输出|导出|告诉我|顯示|输出).{0,10}(设置|設定|配置|指令|提示)",
        r"(パスワード|密码|密碼|비밀번호|トークン).{0,12}(表示|显示|貼り付け|复制|보여)",
    ],
    "evasion": [
        r"(拒否|拒绝|拒絕|阻止).{0,20}(再試行|再试|重试|もう一度)",
    ],
}
