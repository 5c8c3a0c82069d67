"""A project memory asked about in words: the regression set of ranked recall.

A small shop's approved guidance (`ENTRIES`), the questions an agent asks
about it with the entry that answers each (`QUESTIONS`), and questions about
things this memory does not hold (`ABSENT`), which must get no guidance.
Written for chatmem; the public benchmark is LoCoMo (bench/recall_quality.py).
"""

from __future__ import annotations

# (key, type, title, text, target): the key names the entry in QUESTIONS.
ENTRIES: list[tuple[str, str, str, str, str | None]] = [
    (
        "checkout-css",
        "fact",
        "Checkout page styles",
        "The checkout page loads its own stylesheet, checkout.css, after the theme's.",
        None,
    ),
    (
        "checkout-tax",
        "fact",
        "Tax on the checkout",
        "VAT is added at checkout from the customer's shipping country, not billing.",
        None,
    ),
    (
        "header-logo",
        "fact",
        "Site header",
        "The header logo is an SVG in the media library; the mobile header hides the tagline.",
        None,
    ),
    (
        "header-change",
        "fact",
        "Header redesign",
        "The header was redesigned in March: the search box moved into the main menu.",
        None,
    ),
    (
        "staging",
        "fact",
        "Staging site",
        "Staging lives at staging.example.shop and is refreshed from production every Sunday.",
        None,
    ),
    (
        "deploys",
        "convention",
        "Deploy window",
        "Deploy to production only on Tuesday or Thursday mornings, never before a sale.",
        None,
    ),
    (
        "cache",
        "instruction",
        "Clearing the cache",
        "After changing a menu or a widget, purge the page cache from the hosting panel.",
        None,
    ),
    (
        "images",
        "convention",
        "Product photos",
        "Product photos are square, 1200 pixels wide, with a white background.",
        None,
    ),
    (
        "alt-text",
        "convention",
        "Alt text",
        "Every image needs alt text that describes the product, not the file name.",
        None,
    ),
    (
        "newsletter",
        "fact",
        "Newsletter signup",
        "The newsletter form in the footer sends subscribers to the Mailchimp list Shop News.",
        None,
    ),
    (
        "coupons",
        "convention",
        "Coupon codes",
        "Coupon codes are upper case, expire after 30 days and never stack with sale prices.",
        None,
    ),
    (
        "shipping-free",
        "fact",
        "Free shipping threshold",
        "Orders over 50 euros ship free within the EU; elsewhere shipping is by weight.",
        None,
    ),
    (
        "returns",
        "fact",
        "Return policy",
        "Customers may return unworn items within 30 days; sale items are final.",
        None,
    ),
    (
        "tone",
        "convention",
        "Voice of product copy",
        "Write product descriptions in a warm, plain voice: short sentences, no exclamation marks.",
        None,
    ),
    (
        "reviews",
        "instruction",
        "Customer reviews",
        "Reply to every one-star review within a day, politely, and never delete a review.",
        None,
    ),
    (
        "no-home-edit",
        "guardrail",
        "Do not edit the home page",
        "The home page is built by the design agency; agents must not edit it.",
        "post_id:2",
    ),
    (
        "no-delete-posts",
        "guardrail",
        "Never delete posts",
        "Deleting posts breaks inbound links; unpublish instead.",
        "tool:delete_post",
    ),
    (
        "ask-publish",
        "guardrail",
        "Ask before publishing",
        "Publishing a post goes to a person for approval first.",
        "tool:publish_post",
    ),
    (
        "prices",
        "guardrail",
        "Prices are set by the owner",
        "Agents never change product prices or run price experiments.",
        "tool:update_price",
    ),
    (
        "gdpr",
        "instruction",
        "Customer data",
        "Never paste customer names, emails or addresses into a chat or a summary.",
        None,
    ),
    (
        "sizes",
        "fact",
        "Size chart",
        "The size chart is a shared block; edit it once and every product page updates.",
        None,
    ),
    (
        "blog",
        "convention",
        "Blog posts",
        "Blog posts get one category, at most three tags and a featured image.",
        None,
    ),
    (
        "fonts",
        "fact",
        "Fonts",
        "Headings use Playfair Display and body text uses Inter, both served locally.",
        None,
    ),
    (
        "analytics",
        "fact",
        "Analytics",
        "Visits are counted with Plausible; there is no Google Analytics and no cookie banner.",
        None,
    ),
    (
        "backup",
        "fact",
        "Backups",
        "The host takes a nightly backup at 02:00 and keeps it for 14 days.",
        None,
    ),
]

# (question, key of the entry that answers it)
QUESTIONS: list[tuple[str, str]] = [
    ("what do we know about the checkout page?", "checkout-css"),
    ("how is VAT calculated when a customer checks out?", "checkout-tax"),
    ("did anyone change the header recently?", "header-change"),
    ("where is the logo in the header stored?", "header-logo"),
    ("when is the staging site refreshed?", "staging"),
    ("which days may I deploy to production?", "deploys"),
    ("the menu changed but visitors still see the old one", "cache"),
    ("what size should product photos be?", "images"),
    ("how should I write the alt text of an image?", "alt-text"),
    ("which mailing list do newsletter subscribers join?", "newsletter"),
    ("can coupon codes be combined with sale prices?", "coupons"),
    ("when is shipping free?", "shipping-free"),
    ("can customers return items they bought on sale?", "returns"),
    ("what tone should product descriptions have?", "tone"),
    ("someone left a one-star review, what do I do?", "reviews"),
    ("may I edit post 2?", "no-home-edit"),
    ("can I delete a post that is out of date?", "no-delete-posts"),
    ("I want to publish this post now", "ask-publish"),
    ("should I lower the price of the blue scarf?", "prices"),
    ("can I include the customer's email address in my summary?", "gdpr"),
    ("where do I change the size chart?", "sizes"),
    ("how many tags can a blog post have?", "blog"),
    ("which fonts does the site use for headings?", "fonts"),
    ("do we need a cookie banner for analytics?", "analytics"),
    ("how long are backups kept?", "backup"),
    ("checkout", "checkout-css"),
    ("deploying", "deploys"),
    ("photographs of products", "images"),
]

# Questions about things this memory does not hold: no guidance is the answer.
ABSENT: list[str] = [
    "what is the wifi password of the office?",
    "who is the accountant that checks our invoices?",
    "how do I rotate the SSL certificate of the site?",
    "which payment gateway handles refunds in Japan?",
    "when does the warehouse close for Christmas?",
    "what did the board decide about the podcast?",
    "how do I migrate the forum to Discourse?",
    "is there a loyalty programme for customers?",
    "which translation plugin does the French version of the page use?",
    "who designed the product packaging boxes?",
]
