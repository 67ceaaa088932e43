def mean(values):
    """Return the arithmetic mean of a non-empty sequence.

    >>> mean([1, 2, 3, 4])
    2.5
    >>> mean([])
    Traceback (most recent call last):
        ...
    ZeroDivisionError: division by zero
    >>> print("<<<not a fence>>>")
    <<<not a fence>>>
    """
    return sum(values) / len(values)


if __name__ == "__main__":
    import doctest
    doctest.testmod()
