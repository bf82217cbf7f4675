// A study's steps around its negotiations on the seat page: the comprehension quiz (before
// play) and the questionnaire (after it, before the completion code). Each form is built once
// per set of questions (the live view re-renders every second; a rebuilt form would lose what
// the person typed and their focus). Text is only ever written with textContent.
"use strict";

DR.study = (() => {
  const { el } = DR;
  const byId = (id) => document.getElementById(id);

  function build(id, questions, make) {
    const box = byId(id);
    const key = JSON.stringify(questions);
    if (box.dataset.key === key) return false;
    box.dataset.key = key;
    box.replaceChildren(...questions.map(make));
    return true;
  }

  // The quiz: one group of radio buttons per question; the answers are the choices' numbers.
  function quiz(view, rerender) {
    const questions = view.kind === "lobby" ? view.quiz || [] : [];
    byId("quiz-form").classList.toggle("hidden", !questions.length);
    if (!questions.length) return;
    build("quiz-questions", questions, (q, i) => el("fieldset", { id: "quiz-q" + i },
      el("legend", {}, (i + 1) + ". " + q.text),
      ...q.choices.map((choice, c) => el("label", {},
        el("input", { type: "radio", name: "quiz-" + i, value: String(c), required: "" }), " " + choice))));
    const form = byId("quiz-form");
    form.onsubmit = async (event) => {
      event.preventDefault();
      const answers = questions.map((_, i) => {
        const picked = form.querySelector('input[name="quiz-' + i + '"]:checked');
        return picked ? Number(picked.value) : -1;
      });
      try {
        const result = await DR.api("/web/api/seat/quiz", { answers });
        for (let i = 0; i < questions.length; i++) {
          byId("quiz-q" + i).classList.toggle("wrong", result.wrong.includes(i));
        }
        byId("quiz-result").textContent = result.passed ? "All correct."
          : result.ended ? "Not all correct, and that was your last attempt."
          : "Not all correct: look again at the questions marked, and at the instructions. Attempts left: " + result.attempts_left + ".";
      } catch (problem) {
        byId("quiz-result").textContent = String(problem.message || problem);
      }
      rerender();
    };
  }

  // The questionnaire: a choice list or a text box per question.
  function form(view, rerender) {
    const questions = (view.completion && view.completion.questions) || [];
    byId("form").classList.toggle("hidden", !questions.length);
    if (!questions.length) return;
    build("form-questions", questions, (q) => el("p", {},
      el("label", { for: "form-" + q.name }, q.text + (q.required ? " (required)" : "")),
      q.choices.length
        ? el("select", { id: "form-" + q.name, name: q.name },
          el("option", { value: "" }, "-"), ...q.choices.map((c) => el("option", { value: c }, c)))
        : el("textarea", { id: "form-" + q.name, name: q.name, maxlength: String(q.max_chars), rows: "3" })));
    byId("form").onsubmit = async (event) => {
      event.preventDefault();
      const answers = {};
      for (const q of questions) answers[q.name] = byId("form-" + q.name).value;
      try {
        await DR.api("/web/api/seat/form", { answers });
        byId("form-result").textContent = "Thank you: your answers are saved.";
      } catch (problem) {
        byId("form-result").textContent = String(problem.message || problem);
      }
      rerender();
    };
  }

  return { quiz, form };
})();
