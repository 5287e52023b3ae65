//! Every language and script through the real hooks: facts taught in Chinese, Japanese, Korean,
//! German and English with emoji (through Claude Code's `UserPromptSubmit` and `Stop`) are
//! recalled when asked in their language, with the hook answering valid JSON every time; a
//! multibyte character where a shown prompt is compared or cut never breaks the prompt hook; a
//! message with emoji against its words is still found by its meaning.

mod common;

use common::claude::Project;

/// (what is taught, the reply, a question in the same language, what the recall must show)
const FACTS: &[(&str, &str, &str, &str)] = &[
    (
        "记一下：部署流程跑在 Jenkins 上，地址是 ci.internal:8080，每次发布都走这条流水线。",
        "好的，已经记下：发布通过 ci.internal:8080 上的 Jenkins。",
        "部署流程用的是哪个地址？",
        "ci.internal:8080",
    ),
    (
        "メモ：ログは全部 Loki に送っていて、保存期間は 30 日です。",
        "了解です。ログは Loki で 30 日間保持、と記録しました。",
        "ログの保存期間は何日ですか？",
        "Loki",
    ),
    (
        "결제 재시도는 최대 4번이고, 그 이후에는 운영팀에 알림이 갑니다.",
        "알겠습니다. 결제 재시도 4번 후 운영팀에 알림을 보내도록 설정했습니다.",
        "결제 재시도는 몇 번까지 해?",
        "운영팀",
    ),
    (
        "Zur Info: Die Größe der Uploads ist auf 25 MB begrenzt, größere Dateien gehen über vorsignierte URLs.",
        "Alles klar, ich dokumentiere die Begrenzung der Uploads auf 25 MB.",
        "Wie groß dürfen Uploads höchstens sein?",
        "25 MB",
    ),
    (
        "🚀 heads-up: releases are frozen every Friday after 14:00 🧊, no exceptions 🙅",
        "Got it 👍 I'll block merges to main on Friday afternoons.",
        "🤔 are releases frozen on Friday afternoons?",
        "14:00",
    ),
];

#[test]
fn facts_taught_in_each_script_are_recalled_in_their_language() {
    let p = Project::new();
    for (i, (fact, reply, _, _)) in FACTS.iter().enumerate() {
        p.turn(&format!("teach-{i}"), fact, reply);
    }
    for (i, (fact, _, question, must)) in FACTS.iter().enumerate() {
        let ctx = p.ask(&format!("ask-{i}"), question);
        assert!(ctx.contains(must), "{question}: {ctx}");
        // Shown as written, not mangled: the fact's own opening words are in the block.
        let opening: String = fact.chars().take(8).collect();
        assert!(ctx.contains(&opening), "{opening:?} in {ctx}");
    }
}

#[test]
fn a_multibyte_character_at_byte_60_of_a_prompt_never_breaks_recall() {
    let p = Project::new();
    // The topic prompt is 59 ASCII bytes then Chinese, so byte 60 falls inside a character; a
    // short follow-up is stored with it as its session's topic, and both are shown together.
    let topic = format!("{}端口是多少", "the staging pooler question for the billing service, again ");
    assert_eq!(topic.len(), 59 + "端口是多少".len());
    p.turn("s", &topic, "The billing staging pooler listens on 6543.");
    p.turn("s", "rerun?", "Reran: the billing staging pooler answers on 6543.");
    for (i, q) in
        ["Which port does the billing staging pooler use?", "billing staging pooler 端口是多少"].iter().enumerate()
    {
        let ctx = p.ask(&format!("ask-{i}"), q);
        assert!(ctx.contains("6543"), "{q}: {ctx}");
    }
    // Emoji and accents right at the cut of a long memory's passage.
    let long = format!("{} café 😀 the needle sits here: port 7311. {}", "é".repeat(3000), "ü".repeat(3000));
    p.turn("t", &long, "ok");
    assert!(p.ask("ask-long", "Which port does the needle sit on?").contains("7311"));
}

/// Asked in other words, a Chinese or Japanese question shares single characters with its answer
/// and no pair of them (发布之前 / 上线前, 何曜 / 火曜日): found by the characters alone.
#[test]
fn a_paraphrase_in_chinese_or_japanese_is_found_by_its_characters() {
    let p = Project::new();
    p.turn("zh", "规定一下：上线前必须跑完回归测试，没跑完不许合并。", "好的，已写进贡献指南。");
    p.turn("ja", "本番へのデプロイは毎週火曜日の午前に行います。", "了解しました、運用手順に書きました。");
    p.turn("lunch", "午饭吃了面条，下午三点开会。", "好的。");
    p.turn("docs", "README の誤字を直しておいて", "直しました。");
    assert!(p.ask("ask-zh", "发布之前要测什么？").contains("回归测试"));
    assert!(p.ask("ask-ja", "リリースは何曜に出す？").contains("火曜日"));
}

/// A message that writes its emoji against its words ("deploys🚀", "frozen🥶") is read by the
/// model word for word: asked in other words, sharing none of them, it is found by its meaning
/// (each such word was one unknown token, and the message meant next to nothing).
#[test]
fn a_message_with_emoji_against_its_words_is_found_by_its_meaning() {
    let p = Project::new();
    p.turn("freeze", "reminder📌 deploys🚀 frozen🥶 during holidays🎄, hotfixes✅ only", "ok👍");
    teach_others(
        &p,
        &[
            "the login page logo is blurry on retina screens, swap it for the svg",
            "bump the node version in the dockerfile to 22",
            "our sentry quota ran out again this month, raise it to 100k events",
            "rename the billing cron so it matches the other job names",
            "the onboarding email has a typo in the second paragraph",
            "add a dark mode toggle to the settings screen",
        ],
        "Done.",
    );
    let ctx = p.ask("ask", "When are releases to production put on hold?");
    assert!(ctx.contains("frozen"), "{ctx}");
}

/// A German question meets its answer on German stems (Gaszählern / Gaszähler) and on the parts
/// of a compound the answer writes apart (Bestandsdatei / Datei … Bestand), among turns that
/// share the question's other words.
#[test]
fn a_german_question_is_read_by_german_rules() {
    let p = Project::new();
    p.turn("count", "Frau Berger sagt, es gibt grob 12.000 Gaszähler im Netz.", "Notiert.");
    p.turn("file", "Die nächtliche Datei mit dem Bestand aller Kunden kommt als ISO-8859-15.", "Verstanden.");
    teach_others(
        &p,
        &[
            "Wie viele Ablesungen kommen pro Tag ungefähr herein? Gibt es Spitzen?",
            "Welche Kodierung nutzen wir für die Mails, gibt es da Vorgaben?",
            "Die Stromzähler werden einmal im Jahr abgelesen, ungefähr im Dezember.",
            "Wie viele Wasserzähler haben einen Funkmodul? Gibt es eine Liste?",
            "Welche Dateien legt der Export ab, und wie heißen sie?",
            "Hat die Kundennummer immer zehn Stellen? Welche Prüfziffer gibt es?",
            "Die Erinnerungsmails gehen ungefähr drei Wochen vor dem Stichtag raus.",
            "Wie viele Kunden melden online, und wie viele per Postkarte?",
        ],
        "Ok.",
    );
    for (id, question, must) in [
        ("ask-count", "Wie viele Gaszählern gibt es ungefähr?", "12.000"),
        ("ask-file", "Welche Kodierung hat die Bestandsdatei?", "ISO-8859-15"),
    ] {
        let ctx = p.ask(id, question);
        assert!(ctx.contains(must), "{question}: {ctx}");
    }
}

/// Turns on other subjects, each in its own session, answered with `reply`: what a question must
/// be found among.
fn teach_others(p: &Project, others: &[&str], reply: &str) {
    for (i, other) in others.iter().enumerate() {
        p.turn(&format!("other-{i}"), other, reply);
    }
}
