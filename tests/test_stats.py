"""LevelStats against values worked out by hand."""

import math

import pytest
from httpbench.judge.stats import LevelStats, t95


def test_five_values():
    # mean 14; squared deviations 16+4+0+4+16 = 40; sample variance 40/4 = 10
    s = LevelStats.of([18, 10, 14, 12, 16])
    assert (s.n, s.min, s.mean, s.max, s.median) == (5, 10, 14, 18, 14)
    assert s.stdev == pytest.approx(math.sqrt(10))
    assert s.ci95 == pytest.approx(2.776 * math.sqrt(10) / math.sqrt(5))  # t(4) = 2.776
    assert s.cv == pytest.approx(math.sqrt(10) / 14)


def test_even_count_median_and_small_sample_t():
    # mean 2.5; squared deviations 2.25+0.25+0.25+2.25 = 5; variance 5/3
    s = LevelStats.of([1, 2, 3, 4])
    assert s.median == 2.5 and s.stdev == pytest.approx(math.sqrt(5 / 3))
    assert s.ci95 == pytest.approx(3.182 * math.sqrt(5 / 3) / 2)  # t(3) = 3.182


def test_one_value_has_no_spread_and_no_interval():
    s = LevelStats.of([42.0])
    assert (s.n, s.min, s.mean, s.max, s.median, s.stdev, s.cv) == (1, 42, 42, 42, 42, 0, 0)
    assert math.isnan(s.ci95)


def test_equal_values():
    s = LevelStats.of([5, 5, 5])
    assert s.stdev == 0 and s.ci95 == 0 and s.cv == 0


def test_t_table_then_normal():
    assert t95(2) == 12.706 and t95(30) == 2.045 and t95(31) == 1.96 and t95(1000) == 1.96
    # 20 zeros and 20 twos: mean 1, squared deviations 40, variance 40/39, n > 30 so z = 1.96
    s = LevelStats.of([0] * 20 + [2] * 20)
    assert s.mean == 1 and s.ci95 == pytest.approx(1.96 * math.sqrt(40 / 39) / math.sqrt(40))


def test_no_values_is_an_error():
    with pytest.raises(ValueError):
        LevelStats.of([])
