"""Telling teams when the numbers move: webhook endpoints that receive the change feed
(``scenarios.events``), signed as the Standard Webhooks specification says."""
