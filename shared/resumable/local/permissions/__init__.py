"""The permissions each template function needs, proven offline: the AWS calls the functions make
(``calls``, recorded while the tests run), the template's IAM policies as the deploy expands them
(``stack``), and an IAM policy evaluator for the part of the language the template uses (``policy``)."""
