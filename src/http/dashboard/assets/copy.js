// The copy button of the pages that show a key or a signing secret once. Without JavaScript the
// button stays hidden and the text can still be selected (one click selects all of it) and copied by hand.
'use strict';
document.querySelectorAll('button[data-copy]').forEach((button) => {
  const target = document.getElementById(button.dataset.copy);
  const status = document.getElementById('copy-status');
  if (!target) return;
  const what = button.dataset.copyWhat || 'key';
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const selectTarget = () => {
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  };
  button.hidden = false;
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(target.textContent.trim());
      button.textContent = 'Copied';
      say(`The ${what} is on your clipboard.`);
    } catch {
      selectTarget();
      say(`Could not reach the clipboard: the ${what} is selected, press Ctrl+C (⌘C on a Mac) to copy it.`);
    }
  });
});
